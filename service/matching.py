"""Hybrid scoring: dense + BM25 candidates, calibrated `realised` and `direction` probabilities, evidence.

The idea score is the max impact over `realised` matches (same problem and same approach); the direction score the
max over `direction` matches (same problem). A realised match is also a direction match. An idea given as problem +
method (both with content) uses the facet models; one given as free text, or with an empty problem or method, uses
the text models, fitted on the same ideas with problem and method joined into one text.
"""

import numpy as np

from indexing.embedders import Embedder, join
from indexing.matcher.evidence import evidence
from indexing.matcher.features import Allowed, IdeaFacets, candidates, encode_facets, queries_of
from indexing.matcher.model import DECISIONS, HybridMatcher
from indexing.matcher.vectors import stored_vectors
from indexing.versions import LoadedIndex
from indexing.windows import Window
from service.schemas import EvidenceOut, IdeaIn, IdeaScoreOut, MatchOut


class MatcherUnavailable(ValueError):
    """The asked-for matcher cannot run on this index version (the message says why and what to do)."""


class IndexCorpus:
    """A loaded version seen by papers.json position: dense search through its vector index, BM25 beside it."""

    def __init__(self, loaded: LoadedIndex) -> None:
        self.loaded, self.lexical = loaded, loaded.lexical
        self.rows = loaded.rows  # papers.json order: BM25 document i, and for date-ordered versions vector id i
        self.keys = np.array([r["key"] for r in self.rows], dtype=np.int64)  # vector id of each position

    def dense(self, queries: np.ndarray, k: int, allowed: Allowed = None) -> list[list[tuple[int, float]]]:
        return self.loaded.search_positions(queries, k, allowed=allowed)

    def vectors(self, positions: list[int]) -> np.ndarray:
        """The papers' vectors, read back from the vector index."""
        out = stored_vectors(self.loaded.index, self.keys[np.asarray(positions, dtype=np.int64)])
        if out is None:
            raise MatcherUnavailable(f"index {self.loaded.version} ({self.loaded.manifest['index'].get('kind')}) "
                                     "cannot return stored vectors; use matcher=dense")
        return out


def corpus_of(loaded: LoadedIndex) -> IndexCorpus:
    """One IndexCorpus per loaded version (built on first use; the version object is never shared across swaps)."""
    corpus = getattr(loaded, "_matcher_corpus", None)
    if corpus is None:
        corpus = IndexCorpus(loaded)
        loaded._matcher_corpus = corpus  # type: ignore[attr-defined]
    return corpus


def hybrid_of(loaded: LoadedIndex) -> HybridMatcher:
    if loaded.lexical is None:
        raise MatcherUnavailable(f"index {loaded.version} has no lexical index (built before the hybrid matcher); "
                                 "use matcher=dense or rebuild with `hindsight index build`")
    if loaded.hybrid is None:
        raise MatcherUnavailable(f"index {loaded.version} records no fitted hybrid matcher for "
                                 f"{loaded.manifest['model']}; use matcher=dense, or fit one with `hindsight "
                                 "calibrate --matcher hybrid` and rebuild")
    return loaded.hybrid


def facets_of(embedder: Embedder, idea: IdeaIn) -> IdeaFacets:
    if idea.text:
        return IdeaFacets(idea.text.strip())
    problem, method = (idea.problem or "").strip(), (idea.method or "").strip()
    whole = join(embedder, problem, method)
    if problem and method:
        return IdeaFacets(whole, problem, method)
    return IdeaFacets(whole, plain=problem or method)  # one facet only: the text models


def embed_ideas(embedder: Embedder, ideas: list[IdeaIn]) -> list[dict[str, np.ndarray]]:
    """The facet vectors score_hybrid would embed, for callers that score the same ideas several times."""
    return encode_facets(embedder.encode, [facets_of(embedder, i) for i in ideas])


def decide(ideas: list[IdeaFacets], *, loaded: LoadedIndex, embedder: Embedder, top_k: int,
           allowed: Allowed = None, vectors: list[dict[str, np.ndarray]] | None = None) -> list[dict]:
    """Per idea: shape, the top-k candidates ranked by p_realised (then p_direction), their positions in the
    snapshot, probabilities, decisions (realised implies direction) and whole-idea cosines. vectors: the ideas'
    facet vectors (encode_facets) when the caller already has them."""
    matcher = hybrid_of(loaded)
    corpus = corpus_of(loaded)
    # one encode call for every facet of every idea: length-sorted batches beat one pass per text
    vectors = vectors if vectors is not None else encode_facets(embedder.encode, ideas)
    models = {(d, s): matcher.model(d, s) for d in DECISIONS for s in ("facets", "text")}
    out = []
    for f, vecs in zip(ideas, vectors):
        shape = "facets" if f.faceted else "text"
        cands = candidates(corpus, vecs, queries_of(corpus.lexical, f), faceted=f.faceted,
                           n=max(matcher.candidates, top_k), allowed=allowed)
        r_model, d_model = models[("realised", shape)], models[("direction", shape)]
        p_r = r_model.proba(cands.matrix(r_model.features)) if cands.positions else np.zeros(0)
        p_d = d_model.proba(cands.matrix(d_model.features)) if cands.positions else np.zeros(0)
        order = np.lexsort((-p_d, -p_r))[:top_k]  # by p_realised, then p_direction
        realised = p_r[order] >= r_model.threshold
        out.append({"shape": shape, "positions": [cands.positions[j] for j in order], "p_realised": p_r[order],
                    "p_direction": p_d[order], "realised": realised,
                    "direction": realised | (p_d[order] >= d_model.threshold),
                    "similarity": cands.features["cos_whole"][order]})
    return out


def score_hybrid(ideas: list[IdeaIn], *, loaded: LoadedIndex, embedder: Embedder, top_k: int,
                 window: Window | None = None, with_evidence: bool = True,
                 vectors: list[dict[str, np.ndarray]] | None = None) -> list[IdeaScoreOut]:
    """Score among the papers of the window (default: the built one), with that window's impacts; vectors: the
    ideas' facet vectors (embed_ideas) when scoring the same ideas more than once."""
    corpus = corpus_of(loaded)
    window = window or loaded.resolve_window()
    impacts = loaded.window_impacts(window)
    allowed = None if window.range == (0, len(corpus.rows)) else window.range
    facets = [facets_of(embedder, i) for i in ideas]
    out = []
    for idea, f, d in zip(ideas, facets, decide(facets, loaded=loaded, embedder=embedder, top_k=top_k,
                                                  allowed=allowed, vectors=vectors)):
        shape = d["shape"]
        method_text = f.method if f.faceted else f.lexical_texts()["whole"]
        matches = []
        for j, pos in enumerate(d["positions"]):
            paper = corpus.rows[pos]
            realised, direction = bool(d["realised"][j]), bool(d["direction"][j])
            ev = evidence(corpus.lexical, method_text, paper["title"], corpus.lexical.abstracts[pos]) \
                if with_evidence else None
            matches.append(MatchOut(
                paper_id=paper["paper_id"], title=paper["title"], venue=paper["venue"], year=paper["year"],
                citations=paper["citations"], similarity=round(float(d["similarity"][j]), 6),
                impact=impacts.of(pos)[1], above_threshold=realised, p_realised=round(float(d["p_realised"][j]), 6),
                p_direction=round(float(d["p_direction"][j]), 6), realised=realised, direction=direction,
                evidence=EvidenceOut(**ev) if ev else None))
        n_real = sum(m.realised for m in matches)
        n_dir = sum(m.direction for m in matches)
        out.append(IdeaScoreOut(
            id=idea.id, score=max((m.impact for m in matches if m.realised), default=0.0), matched=n_real > 0,
            n_matches=n_real, matches=matches, shape=shape, n_direction_matches=n_dir,
            direction_score=max((m.impact for m in matches if m.direction), default=0.0)))
    return out
