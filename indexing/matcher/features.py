"""Hybrid candidates and their features: dense and BM25 top-N of the whole idea (and of its problem), merged; then
per (idea, candidate) a few numbers that mean the same for ideas of any length or style and corpora of any field.

Per candidate, for each facet f of the idea (whole = problem + method, problem, method; a one-facet idea has only
whole, which stands in for the others):
  cos_f         cosine of the facet, embedded on its own, with the paper (title + abstract)
  cos_f_margin  cos_f minus the best cos_f among the other candidates that are not near-copies of this one
  cos_f_z       cos_f standardised within the idea's pool (minus the pool's mean, over its spread)
  bm25_f        BM25 of the facet divided by the facet's own ceiling (see indexing.lexical)
  bm25_f_share  BM25 of the facet over the pool's best: in [0, 1], 1 for the leader, whatever the idea's length
  bm25_f_margin (bm25_f minus the best among the other non-near-copies) over the pool's best: in [-1, 1]
Near-copies (a preprint and its proceedings version under two ids) are candidates whose paper-paper cosine is
>= NEAR_COPY or whose normalised titles are equal: they count as one for the margins, so two copies of the source
do not cancel each other's lead. The pre-pool-relative features (cos_gap, bm25_gap, cos_method_gap,
bm25_method_gap, dense_rr, lex_rr) stay for the matcher entries fitted on them.

Pair-only features (what entries fitted with a reference lexicon decide on): every one depends on the idea and the
paper alone, never on the other candidates or the window's papers, so a pair is decided the same in every window:
  cos_f, cos_method_own   as above (the cosines are pair-only already)
  lex_f                   idf-weighted share of the facet's stems the paper's title + abstract holds, the idf from
                          the fit's reference lexicon (indexing.matcher.reference); lex_method_own for the method's
                          stems the problem lacks
  lex_f_z, cos_f_z        lex_f and cos_f against what the idea reaches on the fit's reference papers (by chance,
                          and over their vectors' spread): the idea's own scale, without looking at the window
  log_words               log of the idea's word count: its style (a two-line paraphrase or a long proposal)
  cos_parts_min, lex_parts_min, cos_parts_min_z
                          the lesser of the idea's two parts (problem and method; a one-text idea's two halves,
                          facets.halves): a paper that realises the idea holds both
"""

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from indexing.lexical import LexicalIndex, Query, WindowLexical, stemmer, top_positions, words
from indexing.matcher.corpus import Allowed
from indexing.matcher.facets import PARTS, IdeaFacets
from indexing.matcher.reference import Lexicon, Spread, stems

FACETS = ("whole", "problem", "method")
PER_FACET = ("cos", "cos_margin", "cos_z", "bm25", "bm25_share", "bm25_margin")
OWN = ("cos_method_own", "cos_method_own_margin", "bm25_method_own_share", "bm25_method_own_margin")
PAIR_ONLY = tuple(n for f in FACETS for n in (f"lex_{f}", f"lex_{f}_z", f"cos_{f}_z")) + (
    "lex_method_own", "log_words", "cos_parts_min", "cos_parts_min_z", "lex_parts_min")
LEGACY = ("cos_gap", "bm25_gap", "cos_method_gap", "bm25_method_gap", "dense_rr", "lex_rr")
ALL_FEATURES = tuple(_f for f in FACETS for _f in (f"cos_{f}", f"cos_{f}_margin", f"cos_{f}_z", f"bm25_{f}",
                                                    f"bm25_{f}_share", f"bm25_{f}_margin")) + OWN + LEGACY + PAIR_ONLY
N_CANDIDATES = 50
NEAR_COPY = 0.95  # paper-paper cosine at or above which two candidates are one paper for the margins


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


def near_copies(vecs: np.ndarray, titles: Sequence[str] | None = None) -> np.ndarray:
    """Boolean matrix: candidate i and j are near-copies (i == j included)."""
    same = (vecs @ vecs.T) >= NEAR_COPY
    if titles is not None:
        ids: dict[str, int] = {}
        keys = np.array([ids.setdefault(k, len(ids)) if k else -1 - i
                         for i, k in enumerate(" ".join((t or "").lower().split()) for t in titles)])
        same |= keys[:, None] == keys[None, :]
    np.fill_diagonal(same, True)
    return same


def margin(values: np.ndarray, copies: np.ndarray, look: int = 8) -> np.ndarray:
    """value minus the best value among the candidates that are not near-copies of it (0 when there is none)."""
    n = len(values)
    if n < 2:
        return np.zeros_like(values)
    top = np.argsort(-values, kind="stable")[:min(n, look)]
    free = ~copies[:, top]  # per candidate: which of the leaders are other papers
    first = free.argmax(axis=1)
    found = free[np.arange(n), first]
    out = values - values[top[first]]
    if not found.all():  # the leaders are all its copies: look at everyone
        others = np.where(copies, -np.inf, values[None, :]).max(axis=1)
        out = np.where(found, out, np.where(np.isfinite(others), values - others, 0.0))
    return out


def _z(values: np.ndarray) -> np.ndarray:
    sd = values.std()
    return (values - values.mean()) / sd if sd > 1e-9 else np.zeros_like(values)


_PAPER_STEMS: "weakref.WeakKeyDictionary[object, dict[int, frozenset[str]]]" = weakref.WeakKeyDictionary()


def paper_stems(corpus, abstracts: Sequence[str], positions: Sequence[int]) -> list[frozenset[str]]:
    """Stems of each paper's title + abstract, kept with the corpus (a version's papers do not change)."""
    kept = _PAPER_STEMS.setdefault(corpus, {})
    missing = [p for p in positions if p not in kept]
    if missing:
        titles = corpus.titles(missing) or [""] * len(missing)
        for p, t in zip(missing, titles):
            kept[p] = stems(f"{t or ''}\n{abstracts[p] if p < len(abstracts) else ''}")
    return [kept[p] for p in positions]


def pair_only(lexicon: Lexicon, spread: Spread | None, queries: dict[str, Query], papers: Sequence[frozenset[str]],
              words: int, facet_vectors: dict[str, np.ndarray],
              cosines: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The pair-only features of one idea against each paper beyond its cosines (see the module's docstring)."""
    out = {}
    # a one-text idea asks its one query for every facet: each query's coverage and chance are read once
    covered: dict[int, np.ndarray] = {}
    chance: dict[int, tuple[float, float]] = {}
    for f in (*FACETS, "method_own"):
        q = queries.get(f) or queries.get("method" if f == "method_own" else "whole") or queries["whole"]
        if id(q) not in covered:
            covered[id(q)] = lexicon.coverage(q.stems, papers)
        out[f"lex_{f}"] = covered[id(q)]
        if f != "method_own":
            if id(q) not in chance:
                chance[id(q)] = lexicon.chance(q.stems)
            mean, sd = chance[id(q)]
            out[f"lex_{f}_z"] = (out[f"lex_{f}"] - mean) / sd
            if spread is not None:
                out[f"cos_{f}_z"] = spread.z(facet_vectors.get(f, facet_vectors["whole"]), cosines[f])
    out["log_words"] = np.full(len(papers), math.log(max(words, 1)), dtype=np.float64)
    # the two parts: problem and method, or a one-text idea's halves (the whole text when it has neither)
    two = ("problem", "method") if "problem" in facet_vectors else PARTS if PARTS[0] in facet_vectors else ("whole",)
    out["lex_parts_min"] = np.minimum.reduce([out[f"lex_{p}"] if p in FACETS else lexicon.coverage(queries[p].stems,
                                                                                                    papers)
                                              for p in two])
    out["cos_parts_min"] = np.minimum.reduce([cosines[p] for p in two])
    if spread is not None:
        out["cos_parts_min_z"] = np.minimum.reduce([out[f"cos_{p}_z"] if p in FACETS else
                                                    spread.z(facet_vectors[p], cosines[p]) for p in two])
    return out


def candidates(corpus, facet_vectors: dict[str, np.ndarray], queries: dict[str, Query], *, faceted: bool,
               n: int = N_CANDIDATES, allowed: Allowed = None,
               lexical: LexicalIndex | WindowLexical | None = None, lexicon: Lexicon | None = None,
               spread: Spread | None = None, words: int = 0) -> Candidates:
    """Merge the dense and the BM25 top-n of the whole idea (and of its problem) and compute every feature.

    corpus: .dense(queries, k, allowed) -> [[(position, cosine)]], .vectors(positions), .lexical, .titles(positions)
    facet_vectors/queries: per facet in FACETS (problem/method absent when not faceted). lexical: the BM25 to use
    (default the corpus's; a window's own for exact window statistics). lexicon, spread: the fit's reference, for the
    pair-only features (words: the idea's word count)."""
    lexical = lexical or corpus.lexical
    bm25 = {f: lexical.normalised(queries[f], allowed) for f in queries if f not in PARTS}
    searched = ["whole", "problem"] if faceted else ["whole"]  # method_own is scored, never searched
    dense = corpus.dense(np.stack([facet_vectors[f] for f in searched]), n, allowed)
    lex = {f: top_positions(bm25[f], n, allowed) for f in searched}
    pool = list(dict.fromkeys([p for hits in dense for p, _ in hits] + [p for f in searched for p, _ in lex[f]]))
    if not pool:
        return Candidates(positions=[], features={name: np.zeros(0) for name in ALL_FEATURES}, faceted=faceted)
    vecs = corpus.vectors(pool)
    copies = near_copies(vecs, corpus.titles(pool))
    feats: dict[str, np.ndarray] = {}
    for f in FACETS:
        src = f if f in facet_vectors else "whole"
        cos = (vecs @ facet_vectors[src]).astype(np.float64)
        b = bm25[f if f in bm25 else "whole"][pool].astype(np.float64)
        top = b.max()
        feats.update({f"cos_{f}": cos, f"cos_{f}_margin": margin(cos, copies), f"cos_{f}_z": _z(cos),
                      f"bm25_{f}": b, f"bm25_{f}_share": b / top if top > 0 else np.zeros_like(b),
                      f"bm25_{f}_margin": margin(b, copies) / top if top > 0 else np.zeros_like(b)})
    # what the method says beyond the problem: a paper on the same problem by other means shares the problem's
    # words and meaning, not these
    own = feats["cos_method"] - feats["cos_problem"]
    feats.update({"cos_method_own": own, "cos_method_own_margin": margin(own, copies)})
    b = bm25["method_own"][pool].astype(np.float64) if "method_own" in bm25 else feats["bm25_method"]
    top = b.max()
    feats.update({"bm25_method_own_share": b / top if top > 0 else np.zeros_like(b),
                  "bm25_method_own_margin": margin(b, copies) / top if top > 0 else np.zeros_like(b)})
    feats["cos_gap"] = _gap(feats["cos_whole"])
    feats["bm25_gap"] = _gap(feats["bm25_whole"])
    feats["cos_method_gap"] = _gap(feats["cos_method"])
    feats["bm25_method_gap"] = _gap(feats["bm25_method"])
    if lexicon is not None:
        cosines = {f: feats[f"cos_{f}"] for f in FACETS} | {
            p: (vecs @ facet_vectors[p]).astype(np.float64) for p in PARTS if p in facet_vectors}
        feats.update(pair_only(lexicon, spread, queries, paper_stems(corpus, lexical.abstracts, pool), words,
                               facet_vectors, cosines))
    dense_rank = {p: r for r, (p, _) in enumerate(dense[0], start=1)}
    lex_rank = {p: r for r, (p, _) in enumerate(lex["whole"], start=1)}
    feats["dense_rr"] = np.array([1.0 / dense_rank[p] if p in dense_rank else 0.0 for p in pool])
    feats["lex_rr"] = np.array([1.0 / lex_rank[p] if p in lex_rank else 0.0 for p in pool])
    return Candidates(positions=pool, features=feats, faceted=faceted,
                      terms={f: q.stems for f, q in queries.items()})


def queries_of(lexical: LexicalIndex | WindowLexical, idea: IdeaFacets) -> dict[str, Query]:
    """A query per facet, and for a faceted idea `method_own`: the method's words whose stems the problem lacks; for
    a one-text idea with halves, one per half."""
    out = {f: lexical.query(t) for f, t in idea.lexical_texts().items()}
    if idea.parts and not idea.faceted:
        out.update({p: lexical.query(t) for p, t in zip(PARTS, idea.parts)})
    if idea.faceted:
        problem = out["problem"].stems
        own = [w for w in words(str(idea.method)) if stemmer().stemWord(w) not in problem]
        out["method_own"] = lexical.query(" ".join(own))
    return out
