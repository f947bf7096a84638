"""Fitting the hybrid matcher on labelled ideas, judged out-of-fold with leave-one-field-out folds.

Two calibrated models per idea shape: `direction` (does the paper work on the idea's problem?) and `method` (does
the paper use the idea's method?). realised = direction AND method on the same paper, so every realised match is a
direction match by construction, and a known method on another problem (a method swap) is not realised.

Labels come from each idea's kind: paraphrase / loose (or `realised`) are realised by their source paper;
hard_negative (or `direction`) shares only the problem with its source; vague (or `none`) realises nothing;
method_swap (made in code from any labelled set: the problem of idea i with the method of idea j) shares the problem
with i's source and the method with j's source. Training rows are every (idea, candidate) of the merged pools:
`direction` is 1 for the source of a realised, direction or swap idea; `method` is 1 for the source of a realised
idea and for the method source of a swap.

Thresholds: direction's is the smallest probability at which at most `target` of the vague ideas match anything;
method's, given it, the smallest at which every negative kind (hard negatives, swaps, vague) realises anything for
at most `target` of its ideas. Reported figures are nested out-of-fold: for each held-out field, the models are
fitted on the other fields and the thresholds picked on their own inner leave-one-field-out predictions, so nothing
of the judged field was seen. The shipped models are then fitted on all fields, with thresholds picked on the plain
leave-one-field-out predictions.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from indexing.matcher.decide import embed, rank
from indexing.matcher.evaluate import Outcome
from indexing.matcher.facets import IdeaFacets, encode_facets
from indexing.matcher.features import Candidates, candidates, queries_of
from indexing.matcher.reference import Lexicon, Spread
from indexing.matcher.model import Logistic

REALISED_KINDS = {"paraphrase", "loose", "realised"}
DIRECTION_KINDS = {"hard_negative", "direction"}
NONE_KINDS = {"vague", "none"}
SWAP_KINDS = {"method_swap"}
KINDS = REALISED_KINDS | DIRECTION_KINDS | NONE_KINDS | SWAP_KINDS
MODELS = ("direction", "method")
# the negatives each threshold is held to (their any-match rate): direction's alone, then realised = both
NEGATIVE_KINDS = {"direction": ("vague", "none"),
                  "realised": ("hard_negative", "direction", "method_swap", "vague", "none")}

# features per model and idea shape (text-only ideas have only whole-idea features): pair-only, each depending on the
# idea and the paper alone (features.py), so a pair is decided the same in every window; log_words carries the style
FEATURES: dict[str, dict[str, tuple[str, ...]]] = {
    "direction": {
        "facets": ("cos_problem", "cos_problem_z", "lex_problem_z", "cos_whole_z", "lex_whole", "log_words"),
        "text": ("cos_whole", "cos_whole_z", "lex_whole", "lex_whole_z", "log_words"),
    },
    "method": {
        "facets": ("cos_method", "cos_method_z", "cos_method_own", "lex_method_z", "lex_method_own", "cos_whole_z",
                   "log_words"),
        "text": ("cos_whole", "cos_whole_z", "lex_whole", "lex_whole_z", "cos_parts_min_z", "lex_parts_min",
                 "log_words"),
    },
}
CLASS_WEIGHT = None
C = 0.1
TARGET_FALSE_MATCH = 0.05
# vague ideas' any-direction rate: 0.10 finds 86% of hard negatives' sources (0.05: 83%) out-of-fold
DIRECTION_TARGET: float | None = 0.10
FLOOR = 0.0  # thresholds come from held-out fields, not from a floor


@dataclass
class Labelled:
    id: str
    kind: str
    facets: IdeaFacets
    source: int | None  # position of the source paper in the corpus; None for vague ideas
    fold: str
    line: int = 0
    method_source: int | None = None  # a method swap's paper that has its method (on another problem)
    copies: frozenset[int] = field(default_factory=frozenset)  # other positions of the source (near-copies)
    style: str | None = None


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


def method_swaps(ideas: Sequence[Labelled]) -> list[Labelled]:
    """Per realised idea with facets, one swap within its fold: its problem with the next realised idea's method
    (another source); the swap's direction paper is i's source, its method paper j's."""
    out = []
    by_fold: dict[str, list[Labelled]] = {}
    for i in ideas:
        if i.kind in REALISED_KINDS and i.facets.faceted and i.source is not None:
            by_fold.setdefault(i.fold, []).append(i)
    for fold, group in by_fold.items():
        for n, a in enumerate(group):
            b = next((g for g in group[n + 1:] + group[:n] if g.source != a.source), None)
            if b is None:
                continue
            p, m = str(a.facets.problem), str(a.facets.method)
            sep = a.facets.whole[len(p):len(a.facets.whole) - len(m)]  # the embedder's separator, as facets_of joined
            whole = f"{p}{sep}{b.facets.method}"
            out.append(Labelled(id=f"swap:{a.id}+{b.id}", kind="method_swap",
                                facets=IdeaFacets(whole, a.facets.problem, b.facets.method), source=a.source,
                                fold=fold, method_source=b.source, style=a.style))
    return out


def labels(idea: Labelled, cands: Candidates) -> dict[str, np.ndarray]:
    """Per model, which candidates are positives."""
    src = {idea.source, *idea.copies} if idea.source is not None else set()
    is_source = np.array([p in src for p in cands.positions], dtype=bool)
    # a swap's method paper has its method alone: a method label where problem and method are apart; as one text, a
    # paper holding half of it is no realisation, and the text models learn that from the halves
    is_method = np.array([p == idea.method_source and cands.faceted for p in cands.positions], dtype=bool)
    return {"direction": is_source & (idea.kind in REALISED_KINDS | DIRECTION_KINDS | SWAP_KINDS),
            "method": (is_source & (idea.kind in REALISED_KINDS)) | is_method}


def fit_logistic(x: np.ndarray, y: np.ndarray, features: Sequence[str], c: float = C) -> Logistic:
    """Standardise, then an L2 logistic regression; threshold left at 0.5 until picked."""
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

    @property
    def n_rows(self) -> int:
        return sum(len(r) for r in self.rows)

    def x(self, features: Sequence[str], which: Sequence[int] | None = None) -> np.ndarray:
        which = range(len(self.ideas)) if which is None else which
        parts = [self.cands[i].matrix(features) for i in which]
        return np.vstack(parts) if parts else np.zeros((0, len(features)))

    def y(self, model: str, which: Sequence[int] | None = None) -> np.ndarray:
        which = range(len(self.ideas)) if which is None else which
        parts = [labels(self.ideas[i], self.cands[i])[model] for i in which]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def folds(self, which: Sequence[int] | None = None) -> list[str]:
        which = range(len(self.ideas)) if which is None else which
        return sorted({self.ideas[i].fold for i in which})


def pick_threshold(max_probs: dict[str, np.ndarray], target: float, floor: float = FLOOR) -> float:
    """Smallest probability (>= floor) at which every negative kind's any-match rate is <= target."""
    values = np.concatenate([v for v in max_probs.values() if len(v)] or [np.zeros(0)])
    for t in np.unique(np.concatenate([[floor], values[values > floor], [1.0]])):
        # a threshold sits just above a negative's probability, so that idea no longer matches
        t_eff = float(np.nextafter(t, 2.0)) if t in values else float(t)
        if all((v >= t_eff).mean() <= target for v in max_probs.values() if len(v)):
            return min(t_eff, 1.0)
    return 1.0


def fit_models(st: Stacked, shape: str, which: Sequence[int], c: float = C) -> dict[str, Logistic] | None:
    """Both models fitted on the ideas `which`; None when a model has no positive (or no negative) row."""
    out = {}
    for m in MODELS:
        y = st.y(m, which)
        if not y.any() or y.all():
            return None
        out[m] = fit_logistic(st.x(FEATURES[m][shape], which), y, FEATURES[m][shape], c)
    return out


def predict(st: Stacked, models: dict[str, Logistic], which: Sequence[int], into: dict[str, np.ndarray]) -> None:
    for m, model in models.items():
        for i in which:
            into[m][st.rows[i]] = model.proba(st.cands[i].matrix(model.features))


def oof_probs(st: Stacked, shape: str, which: Sequence[int], c: float = C) -> dict[str, np.ndarray]:
    """Leave-one-fold-out probabilities of both models for the ideas `which` (other rows NaN)."""
    out = {m: np.full(st.n_rows, np.nan) for m in MODELS}
    for f in st.folds(which):
        models = fit_models(st, shape, [i for i in which if st.ideas[i].fold != f], c)
        if models is not None:
            predict(st, models, [i for i in which if st.ideas[i].fold == f], out)
    return out


def _per_idea(values: np.ndarray, st: Stacked, which: Sequence[int]) -> np.ndarray:
    return np.array([np.nanmax(values[st.rows[i]]) if len(st.rows[i]) else 0.0 for i in which])


def thresholds_from(st: Stacked, prob: dict[str, np.ndarray], which: Sequence[int],
                    target: float) -> dict[str, float]:
    """Direction's threshold on the vague ideas, then method's so that realised (both) holds every negative kind."""
    def negatives(decision: str, values: np.ndarray) -> dict[str, np.ndarray]:
        out = {k: _per_idea(values, st, [i for i in which if st.ideas[i].kind == k]) for k in NEGATIVE_KINDS[decision]}
        return {k: v[~np.isnan(v)] for k, v in out.items() if len(v)}

    t_d = pick_threshold(negatives("direction", prob["direction"]), DIRECTION_TARGET or target)
    gated = np.where(prob["direction"] >= t_d, prob["method"], 0.0)  # realised needs direction first
    gated = np.where(np.isnan(prob["method"]), np.nan, gated)
    return {"direction": t_d, "method": pick_threshold(negatives("realised", gated), target)}


def nested_oof(st: Stacked, shape: str, target: float, c: float = C) -> tuple[dict[str, np.ndarray], dict]:
    """Outer leave-one-field-out probabilities and, per held-out field, the thresholds picked without it."""
    everyone = list(range(len(st.ideas)))
    prob = {m: np.full(st.n_rows, np.nan) for m in MODELS}
    thresholds: dict[str, dict[str, float]] = {}
    for f in st.folds():
        train = [i for i in everyone if st.ideas[i].fold != f]
        test = [i for i in everyone if st.ideas[i].fold == f]
        thresholds[f] = thresholds_from(st, oof_probs(st, shape, train, c), train, target)
        models = fit_models(st, shape, train, c)
        if models is not None:
            predict(st, models, test, prob)
    return prob, thresholds


def fit_final(st: Stacked, shape: str, target: float, c: float = C) -> tuple[dict[str, Logistic], dict]:
    """Both models fitted on every idea, thresholds picked on plain leave-one-field-out probabilities."""
    everyone = list(range(len(st.ideas)))
    oof = oof_probs(st, shape, everyone, c)
    t = thresholds_from(st, oof, everyone, target)
    models = fit_models(st, shape, everyone, c)
    if models is None:
        raise ValueError("the labelled ideas give no positive (or no negative) candidate for a model")
    return {m: Logistic(v.features, v.mean, v.scale, v.coef, v.intercept, t[m]) for m, v in models.items()}, oof


def build_candidates(ideas: Sequence[Labelled], corpus, encode, *, n: int, text_only: bool = False,
                     embedder=None, lexicon: Lexicon | None = None, spread: Spread | None = None) -> list[Candidates]:
    """Each idea's candidate pool over the corpus; with text_only, problem + method are joined into one text. With
    the embedder, the ideas are embedded as serving embeds them (decide.embed: each facet at its own length, through
    the backend's query path); without it, by `encode`, a facet at a time."""
    shaped = [i.facets.as_text() if text_only else i.facets for i in ideas]
    vectors = embed(embedder, shaped, "hybrid") if embedder is not None else encode_facets(
        lambda groups: [encode(g) for g in groups], shaped)
    return [candidates(corpus, vecs, queries_of(corpus.lexical, idea), faceted=idea.faceted, n=n, lexicon=lexicon,
                       spread=spread, words=idea.words) for idea, vecs in zip(shaped, vectors)]


def outcomes(st: Stacked, prob: dict[str, np.ndarray], t: dict[str, dict[str, float]], top_k: int = 20,
             which: Sequence[int] | None = None) -> list[Outcome]:
    """Per idea: the serving rule (decide.rank) with each fold's thresholds applied."""
    out = []
    for i in range(len(st.ideas)) if which is None else which:
        idea, rows = st.ideas[i], st.rows[i]
        p_d, p_m = prob["direction"][rows], prob["method"][rows]
        is_d = p_d >= t[idea.fold]["direction"]
        order, real, direction = rank(p_d * p_m, p_d, is_d & (p_m >= t[idea.fold]["method"]), is_d, top_k)
        out.append(outcome(idea, [st.cands[i].positions[j] for j in order], real, direction))
    return out


def outcome(idea: Labelled, ranked: list[int], realised: np.ndarray, direction: np.ndarray | None) -> Outcome:
    """The source's copies count as the source (the first one ranked stands for it)."""
    source = idea.source
    if idea.copies and source is not None:
        source = next((p for p in ranked if p in idea.copies or p == idea.source), idea.source)
    return Outcome(kind=idea.kind, source=source, ranked=ranked, realised=[bool(x) for x in realised],
                   direction=None if direction is None else [bool(x) for x in direction])


def feature_baseline(st: Stacked, name: str, threshold: float | dict[str, float], top_k: int = 20) -> list[Outcome]:
    """A single feature (cos_whole: dense-only; bm25_whole: BM25-only) as ranking and, at threshold, decision."""
    out = []
    for i, idea in enumerate(st.ideas):
        v = st.cands[i].features[name]
        t = threshold[idea.fold] if isinstance(threshold, dict) else threshold
        order, real, _ = rank(v, None, v >= t, None, top_k)
        out.append(outcome(idea, [st.cands[i].positions[j] for j in order], real, None))
    return out


def feature_thresholds(st: Stacked, name: str, target: float) -> dict[str, float]:
    """Per held-out fold, the feature's threshold picked on the other folds for the target false-match rate."""
    values = np.concatenate([c.features[name] for c in st.cands]) if st.cands else np.zeros(0)
    everyone = list(range(len(st.ideas)))
    out = {}
    for f in st.folds():
        train = [i for i in everyone if st.ideas[i].fold != f]
        negatives = {k: _per_idea(values, st, [i for i in train if st.ideas[i].kind == k])
                     for k in NEGATIVE_KINDS["realised"]}
        out[f] = pick_threshold({k: v for k, v in negatives.items() if len(v)}, target, floor=-1.0)
    return out


def decision_curve(st: Stacked, prob: dict[str, np.ndarray], decision: str,
                   grid: np.ndarray | None = None) -> list[dict]:
    """Out-of-fold rates against a global threshold on p_direction (direction) or p_direction * p_method
    (realised): source matched per positive kind, any match per negative kind."""
    grid = np.round(np.linspace(0, 1, 101), 2) if grid is None else grid
    score = prob["direction"] if decision == "direction" else prob["direction"] * prob["method"]
    kinds = sorted({i.kind for i in st.ideas})
    best = {}
    for i, idea in enumerate(st.ideas):
        rows = st.rows[i]
        src = [j for j, p in zip(rows, st.cands[i].positions) if p == idea.source or p in idea.copies]
        best[i] = (float(np.nanmax(score[src])) if src else -1.0, float(np.nanmax(score[rows])) if len(rows) else -1.0)
    positive = REALISED_KINDS if decision == "realised" else REALISED_KINDS | DIRECTION_KINDS | SWAP_KINDS
    out = []
    for t in grid:
        row: dict = {"threshold": float(t)}
        for k in kinds:
            members = [i for i, idea in enumerate(st.ideas) if idea.kind == k]
            if k in positive:
                row[f"{k} source"] = float(np.mean([best[i][0] >= t for i in members]))
            row[f"{k} any"] = float(np.mean([best[i][1] >= t for i in members]))
        out.append(row)
    return out
