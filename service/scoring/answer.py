"""Shaping the matcher's decisions into the answer: matches with their papers, impacts and evidence, idea scores.

The decision itself (both rules) is `indexing.matcher.decide`. The idea score is the max impact over matches
(hybrid: realised matches: same problem and same approach); the direction score the max over direction matches.
"""

import numpy as np

from indexing.embedders import Embedder
from indexing.matcher.serving import CorpusView, Decision, FacetVectors, IdeaFacets, decide, embed, facets_of, view_of
from indexing.matcher.verifier.step import VerifierStep
from indexing.versions import LoadedIndex
from indexing.windows import Window, WindowImpact
from service.schemas import EvidenceOut, IdeaIn, IdeaScoreOut, MatchOut, Origin, ScoringContext, VerdictOut
from service.scoring.plan import WindowPlan


def idea_facets(embedder: Embedder, ideas: list[IdeaIn]) -> list[IdeaFacets]:
    return [facets_of(embedder, problem=i.problem, method=i.method, text=i.text) for i in ideas]


def embed_ideas(embedder: Embedder, ideas: list[IdeaIn], matcher: str) -> list[FacetVectors]:
    """The vectors score_ideas would embed, for callers that score the same ideas several times."""
    return embed(embedder, idea_facets(embedder, ideas), matcher)


def score_ideas(ideas: list[IdeaIn], *, loaded: LoadedIndex, embedder: Embedder, top_k: int,
                window: Window | None = None, matcher: str | None = None,
                vectors: list[FacetVectors] | None = None, with_evidence: bool = True,
                verifier: VerifierStep | None = None) -> list[IdeaScoreOut]:
    """Score ideas among the papers of the window (default: the built one), with that window's impacts, by the asked
    matcher (default: the version's); MatcherUnavailable when hybrid cannot run here. The steps a stored run walks
    (flow.score_run), for callers that store nothing."""
    window = window or loaded.resolve_window()
    view = view_of(loaded, window.range, matcher)
    decisions = decide(idea_facets(embedder, ideas), view=view, embedder=embedder, top_k=top_k, vectors=vectors,
                       with_evidence=with_evidence, verifier=verifier)
    return shape(ideas, decisions, view=view, impacts=loaded.window_impacts(window))


def shape(ideas: list[IdeaIn], decisions: list[Decision], *, view: CorpusView,
          impacts: WindowImpact) -> list[IdeaScoreOut]:
    """Each idea's answer from its decision, with the window's impacts and the origin it was read with."""
    return [idea_score(idea.id, d, rows=view.rows, impacts=impacts, origin=idea.origin)
            for idea, d in zip(ideas, decisions)]


def answer_context(view: CorpusView, *, window: Window, impacts: WindowImpact, top_k: int,
                   plan: WindowPlan | None = None, verifier: VerifierStep | None = None) -> ScoringContext:
    """What a score was made with: the matcher and its thresholds, and the effective window (cutoff, window and the
    impact's citation min/max are the window's)."""
    m = view.corpus.loaded.manifest
    extra = {} if plan is None else {
        "cutoff_source": plan.cutoff_source, "leak_risk": plan.leak_risk, "warnings": plan.warnings,
        "knowledge_cutoff": plan.knowledge_cutoff.isoformat() if plan.knowledge_cutoff else None}
    return ScoringContext(model=m["model"], model_id=m["model_id"], revision=m["revision"], theta=m["theta"],
                          index_version=view.corpus.version, cutoff=window.start.isoformat(),
                          window=window.as_dict(), top_k=top_k, impact={**m["impact"], **impacts.stats},
                          built_window=m["window"], matcher=view.matcher, matcher_version=view.matcher_version,
                          thresholds=view.thresholds(), **(verifier.context() if verifier else {}), **extra)


def idea_score(idea_id: str, d: Decision, *, rows: list[dict], impacts: WindowImpact,
               origin: Origin | None = None) -> IdeaScoreOut:
    """One idea's answer: its matches (papers, impacts, the decision's numbers) and its scores."""
    hybrid = d.p_realised is not None or d.verdicts is not None  # two decisions: the hybrid matcher's or verified
    impact, lo = impacts.impact, impacts.window.lo  # read here, not through impacts.of: shape reads no version
    matches = []
    for j, (pos, shared) in enumerate(zip(d.positions, decided_fields(d))):
        paper = rows[pos]
        realised = bool(d.realised[j])
        matches.append(MatchOut(
            paper_id=paper["paper_id"], title=paper["title"], venue=paper["venue"], year=paper["year"],
            citations=paper["citations"], impact=float(impact[pos - lo]),
            above_threshold=realised, realised=realised if hybrid else None,
            direction=bool(d.direction[j]) if d.direction is not None else None, **shared))
    n = sum(m.above_threshold for m in matches)
    score = max((m.impact for m in matches if m.above_threshold), default=0.0)
    verified = d.verdicts is not None
    embedded = [m for m in matches if m.embedding_realised] if verified else []
    return IdeaScoreOut(
        id=idea_id, score=score, matched=n > 0, n_matches=n, matches=matches, shape=d.shape, warnings=d.warnings,
        origin=origin,
        n_direction_matches=sum(bool(m.direction) for m in matches) if hybrid else None,
        direction_score=max((m.impact for m in matches if m.direction), default=0.0) if hybrid else None,
        embedding_score=max((m.impact for m in embedded), default=0.0) if verified else None,
        embedding_n_matches=len(embedded) if verified else None)


def decided_fields(d: Decision) -> list[dict]:
    """Per match of a decision, the fields the answers of both sides of the cutoff share (the shaping twin of
    store.decision_columns): similarity, the matcher's probabilities, evidence and the verifier's reading."""
    k = len(d.positions)
    similarity = _rounded(d.similarity, k)
    p_r, p_d, p_m = (_rounded(v, k) for v in (d.p_realised, d.p_direction, d.p_method))
    return [{"similarity": similarity[j], "p_realised": p_r[j], "p_direction": p_d[j], "p_method": p_m[j],
             "evidence": EvidenceOut(**ev) if d.evidence and (ev := d.evidence[j]) is not None else None,
             **_verdict(d, j)} for j in range(k)]


def _rounded(values: np.ndarray | None, k: int) -> list:
    """Each value rounded as the answer gives it, converted in one pass (None for each when the matcher has none)."""
    return [None] * k if values is None else [round(x, 6) for x in np.asarray(values, dtype=np.float64).tolist()]


def _verdict(d: Decision, j: int) -> dict:
    """The verifier's fields of match j (none without a verifier)."""
    if d.verdicts is None or d.embedding_realised is None:
        return {}
    v = d.verdicts[j]
    return {"verifier": VerdictOut(p_direction=_r(v.p_direction), p_realised=_r(v.p_realised), source=v.source)
            if v else None, "embedding_realised": bool(d.embedding_realised[j]),
            "embedding_direction": bool(d.embedding_direction[j]) if d.embedding_direction is not None else None}


def _r(value: float | np.floating) -> float:
    return round(float(value), 6)
