"""Hybrid candidates and their features: dense top-N and BM25 top-N merged, then per (idea, candidate) a few
numbers that mean the same thing for ideas of any length and corpora of any field.

Per candidate, for each facet f of the idea (whole = problem + method, problem, method):
  cos_f    cosine of the facet, embedded on its own, with the paper (title + abstract)
  bm25_f   BM25 of the facet against the paper divided by the facet's own ceiling (see indexing.lexical)
and, for the whole idea only:
  cos_gap  cos_whole minus the best cos_whole among the other candidates (> 0 only for the clear leader)
  bm25_gap bm25_whole minus the best bm25_whole among the other candidates
  dense_rr, lex_rr  1 / rank in the dense and the BM25 list (0 when outside the top-N)
The model (indexing.matcher.model) uses a named subset of these.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from indexing.lexical import LexicalIndex, Query, top_positions
from indexing.matcher.corpus import Allowed
from indexing.matcher.facets import IdeaFacets

FACETS = ("whole", "problem", "method")
ALL_FEATURES = ("cos_whole", "cos_problem", "cos_method", "bm25_whole", "bm25_problem", "bm25_method",
                "cos_gap", "bm25_gap", "cos_method_gap", "bm25_method_gap", "dense_rr", "lex_rr")
N_CANDIDATES = 50


@dataclass
class Candidates:
    """One idea's merged candidate pool: positions (into papers.json) and a feature matrix, row per candidate."""

    positions: list[int]
    features: dict[str, np.ndarray]
    faceted: bool
    terms: dict[str, frozenset[str]] = field(default_factory=dict)  # stems of each facet, for evidence

    def matrix(self, names: Sequence[str]) -> np.ndarray:
        return np.column_stack([self.features[n] for n in names]) if self.positions else np.zeros((0, len(names)))


def _gap(values: np.ndarray) -> np.ndarray:
    """value minus the best value among the other rows."""
    if len(values) < 2:
        return np.zeros_like(values)
    order = np.argsort(-values, kind="stable")
    best, second = values[order[0]], values[order[1]]
    others = np.where(np.arange(len(values)) == order[0], second, best)
    return values - others


def candidates(corpus, facet_vectors: dict[str, np.ndarray], queries: dict[str, Query], *, faceted: bool,
               n: int = N_CANDIDATES, allowed: Allowed = None,
               dense_hits: list[tuple[int, float]] | None = None) -> Candidates:
    """Merge the dense and the BM25 top-n of the whole idea and compute every feature for the pool.

    corpus: .dense(queries, k, allowed) -> [[(position, cosine)]], .vectors(positions), .lexical.
    facet_vectors/queries: per facet in FACETS (problem/method absent when not faceted).
    """
    lexical: LexicalIndex = corpus.lexical
    bm25 = {f: lexical.normalised(queries[f], allowed) for f in queries}
    dense = dense_hits if dense_hits is not None else corpus.dense(facet_vectors["whole"][None, :], n, allowed)[0]
    lex = top_positions(bm25["whole"], n, allowed)
    pool = list(dict.fromkeys([p for p, _ in dense] + [p for p, _ in lex]))
    if not pool:
        return Candidates(positions=[], features={name: np.zeros(0) for name in ALL_FEATURES}, faceted=faceted)
    vecs = corpus.vectors(pool)
    feats: dict[str, np.ndarray] = {}
    for f in FACETS:
        src = f if f in facet_vectors else "whole"
        feats[f"cos_{f}"] = (vecs @ facet_vectors[src]).astype(np.float64)
        feats[f"bm25_{f}"] = bm25[f if f in bm25 else "whole"][pool].astype(np.float64)
    feats["cos_gap"] = _gap(feats["cos_whole"])
    feats["bm25_gap"] = _gap(feats["bm25_whole"])
    feats["cos_method_gap"] = _gap(feats["cos_method"])
    feats["bm25_method_gap"] = _gap(feats["bm25_method"])
    dense_rank = {p: r for r, (p, _) in enumerate(dense, start=1)}
    lex_rank = {p: r for r, (p, _) in enumerate(lex, start=1)}
    feats["dense_rr"] = np.array([1.0 / dense_rank[p] if p in dense_rank else 0.0 for p in pool])
    feats["lex_rr"] = np.array([1.0 / lex_rank[p] if p in lex_rank else 0.0 for p in pool])
    return Candidates(positions=pool, features=feats, faceted=faceted,
                      terms={f: q.stems for f, q in queries.items()})


def queries_of(lexical: LexicalIndex, idea: IdeaFacets) -> dict[str, Query]:
    return {f: lexical.query(t) for f, t in idea.lexical_texts().items()}
