"""The corpus a matcher searches: dense search, stored vectors and BM25 over one set of papers, by position
(papers.json order). `IndexCorpus` is a loaded version's (built once per version, `corpus_of`); `ArrayCorpus` an
in-memory matrix for calibration and tests; `CorpusView` one window of a version as a request's matcher sees it
(`view_of`: the window's BM25, the rule that decides and its fit), made once per request before deciding."""

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from indexing.errors import DomainError
from indexing.lexical import LexicalIndex, WindowLexical, top_positions
from indexing.matcher.model import HybridMatcher
from indexing.matcher.vectors import stored_vectors
from indexing.vectorindex.base import VectorIndex
from indexing.windows import DATE_ORDER

Allowed = tuple[int, int] | None
CACHED_WINDOWS = 8  # per loaded version: each holds a BM25 index of its window


class Version(Protocol):
    """What the matcher reads of a loaded version (indexing.versions.LoadedIndex), named here so the matcher
    never imports the versions module, which loads the matcher's fits."""

    version: str
    manifest: dict
    index: VectorIndex
    rows: list[dict]
    lexical: LexicalIndex | None
    hybrid: HybridMatcher | None
    views: dict[str, Any]


class MatcherUnavailable(DomainError, ValueError):
    """The asked-for matcher cannot run on this index version (the message says why and what to do)."""

    status = 409


def top_positions_any(scores: np.ndarray, k: int, allowed: Allowed) -> list[tuple[int, float]]:
    """Like lexical.top_positions but keeps negative and zero scores (cosines)."""
    shifted = scores.astype(np.float64) + 3.0  # cosines are >= -1: shifting keeps order and makes all positive
    return [(p, s - 3.0) for p, s in top_positions(shifted, k, allowed)]


class ArrayCorpus:
    """Dense search over an in-memory matrix (rows = papers.json positions), exact; for calibration and tests."""

    def __init__(self, vectors: np.ndarray, lexical: LexicalIndex, titles: Sequence[str] | None = None) -> None:
        self.matrix, self.lexical = np.ascontiguousarray(vectors, dtype=np.float32), lexical
        self._titles = list(titles) if titles is not None else None

    def __len__(self) -> int:
        return len(self.matrix)

    def dense(self, queries: np.ndarray, k: int, allowed: Allowed = None) -> list[list[tuple[int, float]]]:
        sims = queries @ self.matrix.T
        return [top_positions_any(row, k, allowed) for row in sims]

    def vectors(self, positions: Sequence[int]) -> np.ndarray:
        return self.matrix[np.asarray(positions, dtype=np.int64)]

    def titles(self, positions: Sequence[int]) -> list[str] | None:
        return [self._titles[p] for p in positions] if self._titles is not None else None

    def lexical_for(self, allowed: Allowed) -> LexicalIndex:
        return self.lexical


class IndexCorpus:
    """A loaded version seen by papers.json position: dense search through its vector index, BM25 beside it."""

    def __init__(self, loaded: Version) -> None:
        self.loaded = loaded
        self.version, self.index = loaded.version, loaded.index
        self.rows = loaded.rows  # papers.json order: BM25 document i, and for date-ordered versions vector id i
        self.keys = np.array([r["key"] for r in self.rows], dtype=np.int64)  # vector id of each position
        # vector id -> position: the identity for date-ordered versions, the pk for older ones
        self.date_ordered = loaded.manifest.get("vector_ids") == DATE_ORDER
        self._position = None if self.date_ordered else {int(k): i for i, k in enumerate(self.keys)}
        self._windows: dict[tuple[int, int], WindowLexical] = {}
        self._lock = threading.Lock()

    @property
    def lexical(self) -> LexicalIndex:
        if self.loaded.lexical is None:
            raise MatcherUnavailable(f"index {self.version} has no lexical index (built before the hybrid "
                                     "matcher); use matcher=dense or rebuild with `hindsight index build`")
        return self.loaded.lexical

    def dense(self, queries: np.ndarray, k: int, allowed: Allowed = None) -> list[list[tuple[int, float]]]:
        """Top-k per query as (position, cosine), best first, only among positions in [lo, hi)."""
        if len(self.index) == 0:
            return [[] for _ in range(len(queries))]
        if allowed is not None and tuple(allowed) != (0, len(self.rows)):
            if not self.date_ordered:
                raise ValueError(f"index {self.version} has no date-ordered ids: it cannot restrict to {allowed}")
            sims, ids = self.index.search(queries, k, allowed=(int(allowed[0]), int(allowed[1])))
        else:
            sims, ids = self.index.search(queries, k)
        at = self._position
        return [[(int(i) if at is None else at[int(i)], float(s)) for s, i in zip(row_s, row_i) if i >= 0]
                for row_s, row_i in zip(sims, ids)]

    def vectors(self, positions: Sequence[int]) -> np.ndarray:
        """The papers' vectors, read back from the vector index."""
        out = stored_vectors(self.index, self.keys[np.asarray(positions, dtype=np.int64)])
        if out is None:
            raise MatcherUnavailable(f"index {self.version} ({self.loaded.manifest['index'].get('kind')}) "
                                     "cannot return stored vectors; use matcher=dense")
        return out

    def titles(self, positions: Sequence[int]) -> list[str]:
        return [self.rows[p]["title"] for p in positions]

    def lexical_for(self, allowed: Allowed) -> "LexicalIndex | WindowLexical":
        """BM25 with the statistics of the window's papers alone (built on first use, a few kept), so a window
        of a wide version scores as a version built for that window would; the whole version's when unrestricted."""
        full = self.lexical
        if allowed is None or tuple(allowed) == (0, len(self.rows)):
            return full
        key = (int(allowed[0]), int(allowed[1]))
        with self._lock:
            found = self._windows.pop(key, None)
            if found is None:
                lo, hi = key
                found = WindowLexical.of(full, [r["title"] for r in self.rows[lo:hi]], lo, hi)
            self._windows[key] = found  # most recently used last
            while len(self._windows) > CACHED_WINDOWS:
                self._windows.pop(next(iter(self._windows)))
            return found


def corpus_of(loaded: Version) -> IndexCorpus:
    """The version's corpus, made on first use and kept with the version (its window BM25s cached in it)."""
    found = loaded.views.get("corpus")
    if found is None:
        found = loaded.views.setdefault("corpus", IndexCorpus(loaded))  # two racing first uses keep one
    return found


def matcher_of(loaded: Version, asked: str | None = None) -> str:
    """The matcher a request uses: the one asked for, else the version's default (dense for older versions)."""
    block = loaded.manifest.get("matcher")
    return asked or (block.get("default") if isinstance(block, dict) else None) or "dense"


def hybrid_of(loaded: Version) -> HybridMatcher:
    """The version's fitted hybrid matcher; MatcherUnavailable says why it cannot run here."""
    if loaded.lexical is None:
        raise MatcherUnavailable(f"index {loaded.version} has no lexical index (built before the hybrid matcher); "
                                 "use matcher=dense or rebuild with `hindsight index build`")
    if loaded.hybrid is None:
        raise MatcherUnavailable(f"index {loaded.version} records no fitted hybrid matcher for "
                                 f"{loaded.manifest['model']}; use matcher=dense, or fit one with `hindsight "
                                 "calibrate --matcher hybrid` and rebuild")
    return loaded.hybrid


def matcher_version_of(loaded: Version, asked: str | None = None) -> str | None:
    """The fitted hybrid matcher's version a request uses (None: dense), which names a verifier fit."""
    return loaded.hybrid.version if matcher_of(loaded, asked) == "hybrid" and loaded.hybrid is not None else None


@dataclass(frozen=True)
class CorpusView:
    """One window of a version as a request's matcher reads it: the corpus, the window's position range (None:
    the whole version), its BM25 (hybrid only), the rule that decides and its fit (hybrid) or theta (dense)."""

    corpus: IndexCorpus
    allowed: Allowed
    matcher: str
    theta: float
    hybrid: HybridMatcher | None = None
    lexical: "LexicalIndex | WindowLexical | None" = None

    @property
    def rows(self) -> list[dict]:
        return self.corpus.rows

    @property
    def abstracts(self) -> list[str] | None:
        """The whole version's abstracts by position (None in versions built before the lexical index)."""
        return self.corpus.loaded.lexical.abstracts if self.corpus.loaded.lexical is not None else None

    @property
    def matcher_version(self) -> str:
        return self.hybrid.version if self.hybrid is not None else f"theta-{self.theta}"

    def thresholds(self) -> dict:
        return self.hybrid.thresholds() if self.hybrid is not None else {"theta": self.theta}


def view_of(loaded: Version, allowed: Allowed = None, matcher: str | None = None) -> CorpusView:
    """The window [lo, hi) of the version under the asked matcher (default: the version's): the one place a request
    learns which rule decides, and MatcherUnavailable when hybrid cannot run on this version."""
    name = matcher_of(loaded, matcher)
    corpus = corpus_of(loaded)
    allowed = None if allowed is None or tuple(allowed) == (0, len(corpus.rows)) else (int(allowed[0]),
                                                                                        int(allowed[1]))
    theta = float(loaded.manifest["theta"])
    if name == "dense":
        return CorpusView(corpus, allowed, name, theta)
    return CorpusView(corpus, allowed, name, theta, hybrid_of(loaded), corpus.lexical_for(allowed))
