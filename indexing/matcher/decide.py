"""The matcher's decision, for both rules, written once: serving, fitting and evaluation call these functions.

dense: a paper among the idea's top-k matches when its cosine is >= theta (the version's, per model).
hybrid: candidates from dense + BM25, calibrated p_realised / p_direction per candidate; ranked by p_realised
(then p_direction); realised when p_realised >= its threshold, direction when realised or p_direction >= its
threshold, so every realised match is a direction match.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from indexing.embedders import Embedder
from indexing.matcher.corpus import Allowed, IndexCorpus, MatcherUnavailable
from indexing.matcher.evidence import evidence
from indexing.matcher.facets import IdeaFacets, encode_facets
from indexing.matcher.features import candidates, queries_of
from indexing.matcher.model import HybridMatcher
from indexing.matcher.ranges import Range, check_all
from indexing.matcher.verifier.base import Paper, Verdict
from indexing.matcher.verifier.prompts import idea_text
from indexing.matcher.verifier.step import IdeaCandidates, VerifierStep, verify_idea
from indexing.versions import LoadedIndex

FacetVectors = dict[str, np.ndarray]


@dataclass
class Decision:
    """One idea's ranked matches (positions in the version's papers.json) and what the matcher decided."""

    positions: list[int]
    similarity: np.ndarray  # cosine of the whole idea with each paper
    realised: np.ndarray  # bool: a match (dense: cosine >= theta)
    shape: str | None = None  # hybrid only: facets or text
    direction: np.ndarray | None = None
    p_realised: np.ndarray | None = None
    p_direction: np.ndarray | None = None
    p_method: np.ndarray | None = None  # under the problem_and_method rule
    evidence: list[dict] | None = None
    warnings: list[str] = field(default_factory=list)  # inputs out of the matcher's range (ranges.check)
    # the verifier step (None: embedding-only): its verdicts (None past its top K) and the embedding decisions
    verdicts: list[Verdict | None] | None = None
    embedding_realised: np.ndarray | None = None
    embedding_direction: np.ndarray | None = None


def matcher_of(loaded: LoadedIndex, asked: str | None = None) -> str:
    """The matcher a request uses: the one asked for, else the version's default (dense for older versions)."""
    block = loaded.manifest.get("matcher")
    return asked or (block.get("default") if isinstance(block, dict) else None) or "dense"


def hybrid_of(loaded: LoadedIndex) -> HybridMatcher:
    """The version's fitted hybrid matcher; MatcherUnavailable says why it cannot run here."""
    if loaded.lexical is None:
        raise MatcherUnavailable(f"index {loaded.version} has no lexical index (built before the hybrid matcher); "
                                 "use matcher=dense or rebuild with `hindsight index build`")
    if loaded.hybrid is None:
        raise MatcherUnavailable(f"index {loaded.version} records no fitted hybrid matcher for "
                                 f"{loaded.manifest['model']}; use matcher=dense, or fit one with `hindsight "
                                 "calibrate --matcher hybrid` and rebuild")
    return loaded.hybrid


def rank(p_realised: np.ndarray, p_direction: np.ndarray | None, realised: np.ndarray,
         direction: np.ndarray | None, top_k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(order, realised, direction) of the top_k candidates: by p_realised, then p_direction; realised implies
    direction. Without p_direction (a one-score baseline) the order is by the one score and direction is None."""
    p_d = p_direction if p_direction is not None else np.zeros(len(p_realised))
    order = np.lexsort((-p_d, -p_realised))[:top_k]
    if direction is None:
        return order, realised[order], None
    return order, realised[order], (realised | direction)[order]


def embed(embedder: Embedder, ideas: Sequence[IdeaFacets], matcher: str) -> list[FacetVectors]:
    """The vectors `decide` needs (dense: the whole idea; hybrid: every facet), for callers that decide the same
    ideas more than once (e.g. at several cutoffs)."""
    if matcher == "dense":
        return [{"whole": v} for v in embedder.encode([f.whole for f in ideas])] if ideas else []
    return encode_facets(embedder.encode, ideas)


def decide(ideas: Sequence[IdeaFacets], *, loaded: LoadedIndex, embedder: Embedder, matcher: str, top_k: int,
           allowed: Allowed = None, vectors: list[FacetVectors] | None = None,
           with_evidence: bool = False, verifier: VerifierStep | None = None) -> list[Decision]:
    """Each idea's top-k matches under the matcher, among the papers in the allowed position range; with a
    verifier, its top candidates are then read and decided by it (verify_decisions)."""
    vectors = vectors if vectors is not None else embed(embedder, ideas, matcher)
    allowed = None if allowed is None or tuple(allowed) == (0, len(loaded.rows)) else allowed
    ranges = check_all(embedder, ideas)
    if matcher == "dense":  # the paper's rule decides as it always did; the warnings still say what is off
        out = decide_dense(loaded, vectors, top_k=top_k, allowed=allowed)
        for d, r in zip(out, ranges):
            d.warnings = list(r.warnings)
    else:
        out = decide_hybrid(ideas, corpus=loaded.corpus, matcher=hybrid_of(loaded), vectors=vectors, top_k=top_k,
                            allowed=allowed, with_evidence=with_evidence, ranges=ranges)
    if verifier is not None:
        verify_decisions(ideas, out, corpus=loaded.corpus, step=verifier, ranges=ranges)
    return out


def verifier_text(f: IdeaFacets) -> str:
    """The idea as the verifier reads it: the caller's texts, not the embedder's joined input."""
    if f.given == "text" or not (f.problem or f.method or f.plain):
        return idea_text(None, None, f.whole)
    if f.faceted:
        return idea_text(f.problem, f.method, None)
    return idea_text(f.plain if f.given == "problem" else None, f.plain if f.given == "method" else None, f.plain)


def verify_decisions(ideas: Sequence[IdeaFacets], decisions: list[Decision], *, corpus: IndexCorpus,
                     step: VerifierStep, ranges: Sequence[Range]) -> None:
    """The verifier step, in place: each idea's first step.top_k candidates are read and decided by the verifier,
    the rest are not matches; the embedding decisions are kept beside."""
    lexical = corpus.loaded.lexical  # versions built before the hybrid matcher have none: titles only
    abstracts = lexical.abstracts if lexical is not None else None
    for f, d, r in zip(ideas, decisions, ranges):
        papers = [Paper(corpus.rows[p]["paper_id"], corpus.rows[p]["title"], abstracts[p] if abstracts else "")
                  for p in d.positions]
        result = verify_idea(IdeaCandidates(verifier_text(f), papers, can_realise=r.can_realise),
                             verifier=step.verifier, cache=step.cache, top_k=step.top_k, rule=step.rule)
        d.embedding_realised = d.realised
        d.embedding_direction = d.direction if d.direction is not None else d.realised
        d.realised = np.array(result.realised, dtype=bool)
        d.direction = np.array(result.direction, dtype=bool)
        d.verdicts = result.verdicts


def decide_dense(loaded: LoadedIndex, vectors: list[FacetVectors], *, top_k: int,
                 allowed: Allowed = None) -> list[Decision]:
    if not vectors:
        return []
    theta = loaded.manifest["theta"]
    found = loaded.search_positions(np.stack([v["whole"] for v in vectors]), top_k, allowed=allowed)
    out = []
    for hits in found:
        sims = np.array([s for _, s in hits], dtype=np.float64)
        out.append(Decision(positions=[p for p, _ in hits], similarity=sims, realised=sims >= theta))
    return out


def decide_hybrid(ideas: Sequence[IdeaFacets], *, corpus: IndexCorpus, matcher: HybridMatcher,
                  vectors: list[FacetVectors], top_k: int, allowed: Allowed = None, with_evidence: bool = False,
                  ranges: Sequence[Range] | None = None) -> list[Decision]:
    """ranges: per idea, its warnings and whether it can be realised (ranges.check); BM25 statistics are the
    window's own (IndexCorpus.lexical_for)."""
    lexical = corpus.lexical_for(allowed)
    out = []
    for i, (f, vecs) in enumerate(zip(ideas, vectors)):
        shape = "facets" if f.faceted else "text"
        cands = candidates(corpus, vecs, queries_of(lexical, f), faceted=f.faceted,
                           n=max(matcher.candidates, top_k), allowed=allowed, lexical=lexical)
        p = matcher.probabilities(shape, cands)
        is_r, is_d = matcher.decisions(shape, p)
        if ranges is not None and not ranges[i].can_realise:
            is_r = np.zeros_like(is_r)
        order, realised, direction = rank(p["realised"], p["direction"], is_r, is_d, top_k)
        positions = [cands.positions[j] for j in order]
        ev = None
        if with_evidence:
            texts = f.lexical_texts()
            ev = [evidence(lexical, texts.get("method", texts["whole"]), corpus.rows[pos]["title"],
                           corpus.lexical.abstracts[pos], problem_text=texts.get("problem")) for pos in positions]
        out.append(Decision(positions=positions, similarity=cands.features["cos_whole"][order], realised=realised,
                            shape=shape, direction=direction, p_realised=p["realised"][order],
                            p_direction=p["direction"][order],
                            p_method=p["method"][order] if "method" in p else None, evidence=ev,
                            warnings=ranges[i].for_hybrid() if ranges is not None else []))
    return out
