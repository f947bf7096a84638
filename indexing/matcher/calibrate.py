"""Fitting the hybrid matcher on labelled ideas, judged out-of-fold with leave-one-venue-out folds.

Labels come from each idea's kind: paraphrase / loose (or `realised`) are realised by their source paper;
hard_negative (or `direction`) shares only the problem with its source; vague (or `none`) realises nothing.
Training rows are every (idea, candidate) of the merged pools: `realised` is 1 only for the source of a realised
idea, `direction` is 1 for the source of a realised or a direction idea.

A threshold is picked for a target false-match rate: the smallest probability at which, for every negative kind
(realised: hard_negative and vague; direction: vague), at most `target` of its ideas match any candidate. Reported
figures are nested out-of-fold: for each held-out venue family, the model is fitted on the other three and its
threshold picked on their own inner leave-one-venue-out predictions, so nothing of the judged venue was seen. The
shipped model is then fitted on all folds, with the threshold picked on the plain out-of-fold predictions.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from indexing.matcher.decide import rank
from indexing.matcher.evaluate import Outcome
from indexing.matcher.facets import IdeaFacets, encode_facets
from indexing.matcher.features import Candidates, candidates, queries_of
from indexing.matcher.model import Logistic

REALISED_KINDS = {"paraphrase", "loose", "realised"}
DIRECTION_KINDS = {"hard_negative", "direction"}
NONE_KINDS = {"vague", "none"}
KINDS = REALISED_KINDS | DIRECTION_KINDS | NONE_KINDS
# the negatives each decision's threshold is held to (their any-match rate)
NEGATIVE_KINDS = {"realised": ("hard_negative", "direction", "vague", "none"), "direction": ("vague", "none")}

# features per decision and idea shape (text-only ideas have only the whole-idea features)
FEATURES = {
    "realised": {
        "facets": ("cos_whole", "cos_method", "bm25_method", "cos_gap", "bm25_method_gap"),
        "text": ("cos_whole", "bm25_whole", "cos_gap", "bm25_gap"),
    },
    "direction": {
        "facets": ("cos_problem", "bm25_problem", "cos_whole", "cos_gap"),
        "text": ("cos_whole", "bm25_whole", "cos_gap"),
    },
}
# Unweighted L2 logistic regression, strongly regularised: few features, weights that carry across fields. A
# class-balanced fit was tried and let more negatives through out-of-fold (its probabilities crowd near 1, so the
# picked threshold sits where the curve is steep).
CLASS_WEIGHT = None
C = 0.1
TARGET_FALSE_MATCH = 0.05  # per negative kind, on inner out-of-fold predictions
FLOOR = 0.5  # a match is never less likely than not


@dataclass
class Labelled:
    id: str
    kind: str
    facets: IdeaFacets
    source: int | None  # position of the source paper in the corpus; None for vague ideas
    fold: str
    line: int = 0


def venue_family(source_venue: str | None) -> str | None:
    """paperlists venue family: 'corl2024' -> 'corl'."""
    return re.sub(r"\d{4}$", "", source_venue.strip().lower()) if source_venue else None


def assign_folds(families: Sequence[str | None]) -> list[str]:
    """Ideas without a venue (vague ones) go round-robin over the families, in file order."""
    known = sorted({f for f in families if f})
    out, i = [], 0
    for f in families:
        if f:
            out.append(f)
        else:
            out.append(known[i % len(known)] if known else "all")
            i += 1
    return out


def labels(idea: Labelled, cands: Candidates) -> tuple[np.ndarray, np.ndarray]:
    is_source = np.array([p == idea.source for p in cands.positions], dtype=bool)
    realised = is_source & (idea.kind in REALISED_KINDS)
    direction = is_source & (idea.kind in REALISED_KINDS | DIRECTION_KINDS)
    return realised, direction


def fit_logistic(x: np.ndarray, y: np.ndarray, features: Sequence[str], c: float = C) -> Logistic:
    """Standardise, then a class-balanced L2 logistic regression; threshold left at 0.5 until picked."""
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    lr = LogisticRegression(C=c, class_weight=CLASS_WEIGHT, max_iter=2000)
    lr.fit((x - scaler.mean_) / scale, y)
    return Logistic(tuple(features), scaler.mean_.copy(), scale, lr.coef_[0].copy(), float(lr.intercept_[0]), 0.5)


@dataclass
class Stacked:
    """All (idea, candidate) rows of one idea shape."""

    ideas: list[Labelled]
    cands: list[Candidates]
    rows: list[np.ndarray]  # per idea: its row indices

    @classmethod
    def of(cls, ideas: list[Labelled], cands: list[Candidates]) -> "Stacked":
        rows, start = [], 0
        for c in cands:
            rows.append(np.arange(start, start + len(c.positions)))
            start += len(c.positions)
        return cls(ideas, cands, rows)

    def x(self, features: Sequence[str], which: Sequence[int] | None = None) -> np.ndarray:
        which = range(len(self.ideas)) if which is None else which
        parts = [self.cands[i].matrix(features) for i in which]
        return np.vstack(parts) if parts else np.zeros((0, len(features)))

    def y(self, decision: str, which: Sequence[int] | None = None) -> np.ndarray:
        which = range(len(self.ideas)) if which is None else which
        parts = [labels(self.ideas[i], self.cands[i])[0 if decision == "realised" else 1] for i in which]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def pick_threshold(max_probs: dict[str, np.ndarray], target: float, floor: float = FLOOR) -> float:
    """Smallest probability (>= floor) at which every negative kind's any-match rate is <= target."""
    values = np.concatenate([v for v in max_probs.values() if len(v)] or [np.zeros(0)])
    for t in np.unique(np.concatenate([[floor], values[values > floor], [1.0]])):
        # a threshold sits just above a negative's probability, so that idea no longer matches
        t_eff = float(np.nextafter(t, 2.0)) if t in values else float(t)
        if all((v >= t_eff).mean() <= target for v in max_probs.values() if len(v)):
            return min(t_eff, 1.0)
    return 1.0


def _per_idea_max(prob: np.ndarray, rows: list[np.ndarray], which: Sequence[int]) -> np.ndarray:
    return np.array([prob[r].max() if len(r) else 0.0 for r in (rows[i] for i in which)])


def oof_probs(st: Stacked, decision: str, shape: str, which: Sequence[int], c: float = C) -> np.ndarray:
    """Leave-one-fold-out probabilities for the ideas `which` (rows in st order; other rows NaN)."""
    feats = FEATURES[decision][shape]
    out = np.full(sum(len(r) for r in st.rows), np.nan)
    folds = sorted({st.ideas[i].fold for i in which})
    for f in folds:
        train = [i for i in which if st.ideas[i].fold != f]
        test = [i for i in which if st.ideas[i].fold == f]
        y = st.y(decision, train)
        if not y.any() or y.all():
            continue
        model = fit_logistic(st.x(feats, train), y, feats, c)
        for i in test:
            out[st.rows[i]] = model.proba(st.cands[i].matrix(feats))
    return out


def threshold_from(st: Stacked, prob: np.ndarray, decision: str, which: Sequence[int], target: float) -> float:
    negatives = {k: _per_idea_max(prob, st.rows, [i for i in which if st.ideas[i].kind == k])
                 for k in NEGATIVE_KINDS[decision]}
    return pick_threshold({k: v[~np.isnan(v)] for k, v in negatives.items() if len(v)}, target)


def nested_oof(st: Stacked, decision: str, shape: str, target: float, c: float = C) -> tuple[np.ndarray, dict]:
    """Outer leave-one-venue-out probabilities and, per held-out fold, the threshold picked without it."""
    feats = FEATURES[decision][shape]
    everyone = list(range(len(st.ideas)))
    prob = np.full(sum(len(r) for r in st.rows), np.nan)
    thresholds: dict[str, float] = {}
    for f in sorted({i.fold for i in st.ideas}):
        train = [i for i in everyone if st.ideas[i].fold != f]
        test = [i for i in everyone if st.ideas[i].fold == f]
        inner = oof_probs(st, decision, shape, train, c)
        thresholds[f] = threshold_from(st, inner, decision, train, target)
        model = fit_logistic(st.x(feats, train), st.y(decision, train), feats, c)
        for i in test:
            prob[st.rows[i]] = model.proba(st.cands[i].matrix(feats))
    return prob, thresholds


def fit_final(st: Stacked, decision: str, shape: str, target: float, c: float = C) -> tuple[Logistic, np.ndarray]:
    """The model fitted on every idea, its threshold picked on plain leave-one-venue-out probabilities."""
    feats = FEATURES[decision][shape]
    everyone = list(range(len(st.ideas)))
    oof = oof_probs(st, decision, shape, everyone, c)
    t = threshold_from(st, oof, decision, everyone, target)
    m = fit_logistic(st.x(feats), st.y(decision), feats, c)
    return Logistic(m.features, m.mean, m.scale, m.coef, m.intercept, t), oof


def build_candidates(ideas: Sequence[Labelled], corpus, encode, *, n: int, text_only: bool = False) -> list[Candidates]:
    """Each idea's candidate pool over the corpus; with text_only, problem + method are joined into one text."""
    shaped = [i.facets.as_text() if text_only else i.facets for i in ideas]
    vectors = encode_facets(encode, shaped)
    return [candidates(corpus, vecs, queries_of(corpus.lexical, idea), faceted=idea.faceted, n=n)
            for idea, vecs in zip(shaped, vectors)]


def outcomes(st: Stacked, p_real: np.ndarray, p_dir: np.ndarray | None, t_real: dict[str, float],
             t_dir: dict[str, float] | None, top_k: int = 20) -> list[Outcome]:
    """Per idea: the serving rule (decide.rank) with each fold's thresholds applied."""
    out = []
    for i, idea in enumerate(st.ideas):
        rows = st.rows[i]
        order, real, direction = rank(p_real[rows], p_dir[rows] if p_dir is not None else None,
                                      t_real[idea.fold], t_dir[idea.fold] if t_dir is not None else None, top_k)
        out.append(Outcome(kind=idea.kind, source=idea.source, ranked=[st.cands[i].positions[j] for j in order],
                           realised=[bool(x) for x in real],
                           direction=None if direction is None else [bool(x) for x in direction]))
    return out


def feature_baseline(st: Stacked, name: str, threshold: float | dict[str, float], top_k: int = 20) -> list[Outcome]:
    """A single feature (cos_whole: dense-only; bm25_whole: BM25-only) as ranking and, at threshold, decision."""
    values = np.concatenate([c.features[name] for c in st.cands]) if st.cands else np.zeros(0)
    t = threshold if isinstance(threshold, dict) else {i.fold: threshold for i in st.ideas}
    return outcomes(st, values, None, t, None, top_k)


def feature_thresholds(st: Stacked, name: str, target: float) -> dict[str, float]:
    """Per held-out fold, the feature's threshold picked on the other folds for the target false-match rate."""
    values = np.concatenate([c.features[name] for c in st.cands]) if st.cands else np.zeros(0)
    everyone = list(range(len(st.ideas)))
    out = {}
    for f in sorted({i.fold for i in st.ideas}):
        train = [i for i in everyone if st.ideas[i].fold != f]
        negatives = {k: _per_idea_max(values, st.rows, [i for i in train if st.ideas[i].kind == k])
                     for k in NEGATIVE_KINDS["realised"]}
        out[f] = pick_threshold({k: v for k, v in negatives.items() if len(v)}, target, floor=-1.0)
    return out


def decision_curve(st: Stacked, prob: np.ndarray, decision: str, grid: np.ndarray | None = None) -> list[dict]:
    """Out-of-fold rates against a global threshold: source matched per positive kind, any match per negative."""
    grid = np.round(np.linspace(0, 1, 101), 2) if grid is None else grid
    kinds = sorted({i.kind for i in st.ideas})
    best_source = {}
    for i, idea in enumerate(st.ideas):
        rows = st.rows[i]
        src = [j for j, p in zip(rows, st.cands[i].positions) if p == idea.source]
        best_source[i] = (float(prob[src[0]]) if src else -1.0, float(prob[rows].max()) if len(rows) else -1.0)
    positive = REALISED_KINDS if decision == "realised" else REALISED_KINDS | DIRECTION_KINDS
    out = []
    for t in grid:
        row: dict = {"threshold": float(t)}
        for k in kinds:
            members = [i for i, idea in enumerate(st.ideas) if idea.kind == k]
            if k in positive:
                row[f"{k} source"] = float(np.mean([best_source[i][0] >= t for i in members]))
            row[f"{k} any"] = float(np.mean([best_source[i][1] >= t for i in members]))
        out.append(row)
    return out
