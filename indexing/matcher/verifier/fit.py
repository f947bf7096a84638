"""Calibrating the verifier across fields: two small logistic models over the verifier's and the embedding
matcher's probabilities of each idea's top K candidates, with thresholds held to the negative kinds, judged by
nested leave-one-field-out (for each held-out field: models fitted on the other fields, thresholds picked on those
fields' own inner leave-one-field-out predictions).

Labels, as the hybrid matcher's fit: direction is 1 for the source of a paraphrase, loose, hard-negative or
method-swap idea; realised is 1 for the source of a paraphrase or loose idea. Thresholds: direction's is the
smallest at which at most DIRECTION_TARGET of the vague ideas have a direction match; realised's, given it, the
smallest at which hard negatives, method swaps and vague ideas each realise anything for at most `target`.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from indexing.embedders import Embedder
from indexing.matcher.calibrate import fit_logistic, pick_threshold
from indexing.matcher.corpus import Version, view_of
from indexing.matcher.decide import decide, embed, verifier_text
from indexing.matcher.evaluate import Outcome, field_of, summarise
from indexing.matcher.labelled import LabelledIdea
from indexing.matcher.model import Logistic
from indexing.matcher.ranges import check_all
from indexing.matcher.verifier.base import Paper, Verdict
from indexing.matcher.verifier.rule import VerifierRule, features
from indexing.matcher.verifier.step import IdeaCandidates, VerifierStep, verify_idea

DIRECTION_FEATURES = ("v_direction", "p_direction")
REALISED_FEATURES = ("v_realised", "v_direction", "p_method")
DIRECTION_KINDS = {"paraphrase", "loose", "hard_negative", "method_swap"}
REALISED_KINDS = {"paraphrase", "loose"}
DIRECTION_TARGET = 0.10
C = 1.0


@dataclass
class Read:
    """One labelled idea's top K candidates as read: embedding probabilities and verdicts, and the labels."""

    idea_id: str
    kind: str
    field: str
    style: str
    positions: list[int]
    source: int | None
    x: dict[str, np.ndarray]  # feature -> per candidate
    can_realise: bool = True

    @classmethod
    def of(cls, *, idea_id: str, kind: str, field: str, style: str, positions: list[int], source: int | None,
           verdicts: Sequence[Verdict], embedding: Sequence[dict[str, float | None]],
           can_realise: bool = True) -> "Read":
        rows = [features(v, e) for v, e in zip(verdicts, embedding)]
        x = {n: np.array([r[n] for r in rows], dtype=np.float64) for n in rows[0]} if rows else {}
        return cls(idea_id, kind, field, style, positions, source, x, can_realise)

    def matrix(self, names: Sequence[str]) -> np.ndarray:
        return np.column_stack([self.x[n] for n in names]) if self.positions else np.zeros((0, len(names)))

    def labels(self) -> dict[str, np.ndarray]:
        is_source = np.array([p == self.source for p in self.positions], dtype=bool)
        return {"direction": is_source & (self.kind in DIRECTION_KINDS),
                "realised": is_source & (self.kind in REALISED_KINDS)}


def _fit(reads: Sequence[Read]) -> tuple[Logistic, Logistic] | None:
    if not reads:
        return None
    models = []
    for name, feats in (("direction", DIRECTION_FEATURES), ("realised", REALISED_FEATURES)):
        x = np.vstack([r.matrix(feats) for r in reads])
        y = np.concatenate([r.labels()[name] for r in reads])
        if not y.any() or y.all():
            return None
        models.append(fit_logistic(x, y, feats, C))
    return models[0], models[1]


def _probs(models: tuple[Logistic, Logistic], r: Read) -> tuple[np.ndarray, np.ndarray]:
    d, m = models
    return d.proba(r.matrix(d.features)), m.proba(r.matrix(m.features))


def _oof(reads: Sequence[Read]) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Leave-one-field-out probabilities of the reads (None where the other fields gave no fit)."""
    out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(reads)
    for f in sorted({r.field for r in reads}):
        models = _fit([r for r in reads if r.field != f])
        if models is None:
            continue
        for i, r in enumerate(reads):
            if r.field == f:
                out[i] = _probs(models, r)
    return out


def _thresholds(reads: Sequence[Read], probs: Sequence[tuple[np.ndarray, np.ndarray] | None],
                target: float) -> tuple[float, float]:
    def best(values: np.ndarray) -> float:
        return float(values.max()) if len(values) else 0.0

    vague = np.array([best(p[0]) for r, p in zip(reads, probs) if p is not None and r.kind == "vague"])
    t_d = pick_threshold({"vague": vague}, DIRECTION_TARGET, floor=0.0)
    negatives: dict[str, list[float]] = {}
    for r, p in zip(reads, probs):
        if p is not None and r.kind in ("hard_negative", "method_swap", "vague"):
            negatives.setdefault(r.kind, []).append(best(np.where(p[0] >= t_d, p[1], 0.0)))
    t_r = pick_threshold({k: np.array(v) for k, v in negatives.items()}, target, floor=0.0)
    return t_d, t_r


def _outcome(r: Read, p: tuple[np.ndarray, np.ndarray], t_d: float, t_r: float) -> Outcome:
    direction = p[0] >= t_d
    realised = direction & (p[1] >= t_r) & r.can_realise
    return Outcome(r.kind, r.source, r.positions, [bool(v) for v in realised], [bool(v) for v in direction])


def nested(reads: Sequence[Read], target: float) -> tuple[list[Outcome | None], dict[str, dict[str, float]]]:
    """Nested leave-one-field-out outcomes (None where a fold could not be fitted) and each fold's thresholds."""
    outcomes: list[Outcome | None] = [None] * len(reads)
    picked = {}
    for f in sorted({r.field for r in reads}):
        train = [r for r in reads if r.field != f]
        models = _fit(train)
        if models is None:
            continue
        t_d, t_r = _thresholds(train, _oof(train), target)
        picked[f] = {"direction": round(t_d, 6), "realised": round(t_r, 6)}
        for i, r in enumerate(reads):
            if r.field == f:
                outcomes[i] = _outcome(r, _probs(models, r), t_d, t_r)
    return outcomes, picked


def fit_rule(reads: Sequence[Read], target: float, version: str) -> VerifierRule:
    """The shipped rule: models fitted on every field, thresholds from plain leave-one-field-out predictions."""
    models = _fit(reads)
    if models is None:
        raise ValueError("the labelled ideas give no positive (or no negative) candidate for a verifier model")
    t_d, t_r = _thresholds(reads, _oof(reads), target)
    return VerifierRule(version=version, t_direction=t_d, t_realised=t_r, direction_model=models[0],
                        realised_model=models[1])


def raw_outcomes(reads: Sequence[Read], t: float = 0.5) -> list[Outcome]:
    """The verifier alone, uncalibrated (its probabilities at 0.5): what an unfitted revision answers."""
    out = []
    for r in reads:
        p_d = 1 / (1 + np.exp(-r.x["v_direction"]))
        p_r = 1 / (1 + np.exp(-r.x["v_realised"]))
        out.append(_outcome(r, (p_d, p_r), t, t))
    return out


def report(reads: Sequence[Read], target: float, resamples: int = 1000) -> dict:
    """Out-of-fold figures per kind, per field and per style, beside the uncalibrated verifier."""
    outcomes, picked = nested(reads, target)
    kept = [(r, o) for r, o in zip(reads, outcomes) if o is not None]

    def by(key) -> dict:
        groups: dict[str, list[Outcome]] = {}
        for r, o in kept:
            groups.setdefault(key(r), []).append(o)
        return {g: summarise(os, resamples=resamples) for g, os in sorted(groups.items())}

    return {"ideas": len(reads), "judged": len(kept), "fold_thresholds": picked,
            "by_kind": summarise([o for _, o in kept], resamples=resamples),
            "by_field": by(lambda r: r.field), "by_style": by(lambda r: r.style),
            "uncalibrated_by_kind": summarise(raw_outcomes(reads), resamples=resamples)}


def read_labelled_ideas(ideas: Sequence[LabelledIdea], *, loaded: Version, embedder: Embedder, step: VerifierStep,
                        cached_only: bool = False,
                        progress: Callable[[str, int, int], None] | None = None) -> tuple[list[Read], int]:
    """Each labelled idea's hybrid top K (step.top_k) read by the verifier (through its cache), as Reads; with
    cached_only, ideas with a pair not in the cache are left out. Returns (reads, ideas left out)."""
    view = view_of(loaded, None, "hybrid")
    facets = [i.facets(embedder) for i in ideas]
    vectors = embed(embedder, facets, "hybrid")
    decisions = decide(facets, view=view, embedder=embedder, top_k=step.top_k, vectors=vectors)
    ranges = check_all(embedder, facets)
    position = {r["paper_id"]: n for n, r in enumerate(view.rows)}
    abstracts = view.abstracts or [""] * len(view.rows)
    reads, skipped = [], 0
    for idea, f, d, r in zip(ideas, facets, decisions, ranges):
        papers = [Paper(view.rows[p]["paper_id"], view.rows[p]["title"], abstracts[p]) for p in d.positions]
        text = verifier_text(f)
        if cached_only:
            known = step.cache.get(step.verifier.revision, text, [p.paper_id for p in papers]) if step.cache else {}
            if len(known) < len(papers):
                skipped += 1
                continue
            verdicts = [known[p.paper_id] for p in papers]
        else:  # the matcher step's own read: cache first, then the verifier for what is missing
            read = verify_idea(IdeaCandidates(text, papers), verifier=step.verifier, cache=step.cache,
                               top_k=len(papers)).verdicts
            verdicts = [v for v in read if v is not None]
        embedding = [{"p_direction": float(d.p_direction[j]) if d.p_direction is not None else None,
                      "p_method": float(d.p_method[j]) if d.p_method is not None else None}
                     for j in range(len(papers))]
        reads.append(Read.of(idea_id=idea.id, kind=idea.kind or "unlabelled", field=field_of(idea),
                             style=idea.style or "short", positions=list(d.positions),
                             source=position.get(idea.source) if idea.source else None,
                             verdicts=verdicts, embedding=embedding,
                             can_realise=r.can_realise))
        if progress:
            progress("verify", 1, len(ideas))
    return reads, skipped
