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
from indexing.lexical import LexicalIndex, WindowLexical
from indexing.matcher.corpus import Allowed, CorpusView, IndexCorpus, Version, hybrid_of, matcher_of, view_of
from indexing.matcher.evidence import evidence
from indexing.matcher.facets import IdeaFacets, encode_facets
from indexing.matcher.features import candidates, queries_of
from indexing.matcher.model import HybridMatcher
from indexing.matcher.ranges import Range, check_all, token_counts
from indexing.matcher.verifier.base import Paper, Verdict
from indexing.matcher.verifier.prompts import idea_text
from indexing.matcher.verifier.step import IdeaCandidates, VerifierStep, verify_idea

__all__ = ["Decision", "decide", "embed", "hybrid_of", "matcher_of", "rank"]  # the rule's choice lives in corpus

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
    evidence: list[dict | None] | None = None  # None past decide's evidence_top
    warnings: list[str] = field(default_factory=list)  # inputs out of the matcher's range (ranges.check)
    # the verifier step (None: embedding-only): its verdicts (None past its top K) and the embedding decisions
    verdicts: list[Verdict | None] | None = None
    embedding_realised: np.ndarray | None = None
    embedding_direction: np.ndarray | None = None


def rank(p_realised: np.ndarray, p_direction: np.ndarray | None, realised: np.ndarray,
         direction: np.ndarray | None, top_k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(order, realised, direction) of the top_k candidates: by p_realised, then p_direction; realised implies
    direction. Without p_direction (a one-score baseline) the order is by the one score and direction is None."""
    p_d = p_direction if p_direction is not None else np.zeros(len(p_realised))
    order = np.lexsort((-p_d, -p_realised))[:top_k]
    if direction is None:
        return order, realised[order], None
    return order, realised[order], (realised | direction)[order]


def embed(embedder: Embedder, ideas: Sequence[IdeaFacets], matcher: str,
          counts: Sequence[dict[str, int]] | None = None) -> list[FacetVectors]:
    """The vectors `decide` needs (dense: the whole idea; hybrid: every facet), each text at its own length
    (encode_facets; counts: ranges.token_counts', counted here when not given), for callers that decide the same
    ideas more than once (e.g. at several cutoffs)."""
    if not ideas:
        return []
    counts = counts if counts is not None else token_counts(embedder, ideas)
    max_tokens = getattr(embedder, "max_tokens", None)
    if matcher == "dense":
        whole = [IdeaFacets(f.whole) for f in ideas]  # the whole text alone
        return encode_facets(embedder.encode_many, whole, max_tokens=max_tokens,
                             counts=[{"whole": c["whole"]} for c in counts] if counts is not None else None)
    return encode_facets(embedder.encode_many, ideas, counts=counts, max_tokens=max_tokens)


def decide(ideas: Sequence[IdeaFacets], *, loaded: Version | None = None, view: CorpusView | None = None,
           embedder: Embedder, matcher: str | None = None, top_k: int, allowed: Allowed = None,
           vectors: list[FacetVectors] | None = None, with_evidence: bool = False,
           verifier: VerifierStep | None = None, counts: Sequence[dict[str, int]] | None = None,
           evidence_top: int | None = None) -> list[Decision]:
    """Each idea's top-k matches under the matcher, among the papers of the view (a request's, made by view_of),
    or of the loaded version's allowed position range under the asked matcher (default: the version's); with a
    verifier, its top candidates are then read and decided by it (verify_decisions). counts: the ideas'
    ranges.token_counts, for callers that decide them in more than one window (counted here when not given);
    evidence_top: with_evidence for the first matches only (the rest None)."""
    if view is None:
        if loaded is None:
            raise TypeError("decide needs a view or a loaded version")
        view = view_of(loaded, allowed, matcher)
    counts = counts if counts is not None else token_counts(embedder, ideas)  # once: range checks, unpadded encodes
    vectors = vectors if vectors is not None else embed(embedder, ideas, view.matcher, counts)
    ranges = check_all(embedder, ideas, counts)
    if view.matcher == "dense":  # the paper's rule decides as it always did; the warnings still say what is off
        out = decide_dense(view.corpus, vectors, theta=view.theta, top_k=top_k, allowed=view.allowed)
        for d, r in zip(out, ranges):
            d.warnings = list(r.warnings)
    else:
        assert view.hybrid is not None and view.lexical is not None  # view_of checked the version holds both
        out = decide_hybrid(ideas, corpus=view.corpus, matcher=view.hybrid, vectors=vectors, top_k=top_k,
                            allowed=view.allowed, with_evidence=with_evidence, ranges=ranges, lexical=view.lexical,
                            evidence_top=evidence_top)
    if verifier is not None:
        verify_decisions(ideas, out, view=view, step=verifier, ranges=ranges)
    return out


def verifier_text(f: IdeaFacets) -> str:
    """The idea as the verifier reads it: the caller's texts, not the embedder's joined input."""
    if f.given == "text" or not (f.problem or f.method or f.plain):
        return idea_text(None, None, f.whole)
    if f.faceted:
        return idea_text(f.problem, f.method, None)
    return idea_text(f.plain if f.given == "problem" else None, f.plain if f.given == "method" else None, f.plain)


def verify_decisions(ideas: Sequence[IdeaFacets], decisions: list[Decision], *, view: CorpusView,
                     step: VerifierStep, ranges: Sequence[Range]) -> None:
    """The verifier step, in place: each idea's first step.top_k candidates are read and decided by the verifier,
    the rest are not matches; the embedding decisions are kept beside."""
    rows, abstracts = view.rows, view.abstracts  # versions built before the hybrid matcher have none: titles only
    for f, d, r in zip(ideas, decisions, ranges):
        papers = [Paper(rows[p]["paper_id"], rows[p]["title"], abstracts[p] if abstracts else "")
                  for p in d.positions]
        embedding = None if d.p_direction is None else [
            {"p_direction": float(d.p_direction[j]),
             "p_method": float(d.p_method[j]) if d.p_method is not None else None} for j in range(len(papers))]
        result = verify_idea(IdeaCandidates(verifier_text(f), papers, can_realise=r.can_realise, embedding=embedding),
                             verifier=step.verifier, cache=step.cache, top_k=step.top_k, rule=step.rule)
        d.embedding_realised = d.realised
        d.embedding_direction = d.direction if d.direction is not None else d.realised
        d.realised = np.array(result.realised, dtype=bool)
        d.direction = np.array(result.direction, dtype=bool)
        d.verdicts = result.verdicts


def decide_dense(corpus: IndexCorpus, vectors: list[FacetVectors], *, theta: float, top_k: int,
                 allowed: Allowed = None) -> list[Decision]:
    if not vectors:
        return []
    found = corpus.dense(np.stack([v["whole"] for v in vectors]), top_k, allowed)
    out = []
    for hits in found:
        sims = np.array([s for _, s in hits], dtype=np.float64)
        out.append(Decision(positions=[p for p, _ in hits], similarity=sims, realised=sims >= theta))
    return out


def decide_hybrid(ideas: Sequence[IdeaFacets], *, corpus: IndexCorpus, matcher: HybridMatcher,
                  vectors: list[FacetVectors], top_k: int, allowed: Allowed = None, with_evidence: bool = False,
                  ranges: Sequence[Range] | None = None,
                  lexical: "LexicalIndex | WindowLexical | None" = None,
                  evidence_top: int | None = None) -> list[Decision]:
    """ranges: per idea, its warnings and whether it can be realised (ranges.check); lexical: the window's own BM25
    (the view's; default IndexCorpus.lexical_for)."""
    lexical = lexical if lexical is not None else corpus.lexical_for(allowed)
    out = []
    for i, (f, vecs) in enumerate(zip(ideas, vectors)):
        shape = "facets" if f.faceted else "text"
        cands = candidates(corpus, vecs, queries_of(lexical, f), faceted=f.faceted,
                           n=max(matcher.candidates, top_k), allowed=allowed, lexical=lexical,
                           lexicon=matcher.lexicon, spread=matcher.spread, words=f.words)
        p = matcher.probabilities(shape, cands)
        is_r, is_d = matcher.decisions(shape, p)
        if ranges is not None and not ranges[i].can_realise:
            is_r = np.zeros_like(is_r)
        order, realised, direction = rank(p["realised"], p["direction"], is_r, is_d, top_k)
        positions = [cands.positions[j] for j in order]
        ev: list[dict | None] | None = None
        if with_evidence:
            texts = f.lexical_texts()
            top = len(positions) if evidence_top is None else evidence_top
            ev = [evidence(lexical, texts.get("method", texts["whole"]), corpus.rows[pos]["title"],
                           lexical.abstracts[pos], problem_text=texts.get("problem")) if j < top else None
                  for j, pos in enumerate(positions)]
        out.append(Decision(positions=positions, similarity=cands.features["cos_whole"][order], realised=realised,
                            shape=shape, direction=direction, p_realised=p["realised"][order],
                            p_direction=p["direction"][order],
                            p_method=p["method"][order] if "method" in p else None, evidence=ev,
                            warnings=ranges[i].for_hybrid() if ranges is not None else []))
    return out
