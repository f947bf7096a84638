"""The corpus a matcher searches: dense search, stored vectors and BM25 over one set of papers, by position
(papers.json order). `IndexCorpus` is a loaded version's view (LoadedIndex.corpus, built once per version);
`ArrayCorpus` an in-memory matrix for calibration and tests."""

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from indexing.lexical import LexicalIndex, WindowLexical, top_positions
from indexing.matcher.vectors import stored_vectors

if TYPE_CHECKING:
    from indexing.versions import LoadedIndex

Allowed = tuple[int, int] | None
CACHED_WINDOWS = 8  # per loaded version: each holds a BM25 index of its window


class MatcherUnavailable(ValueError):
    """The asked-for matcher cannot run on this index version (the message says why and what to do)."""


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

    def __init__(self, loaded: "LoadedIndex") -> None:
        self.loaded = loaded
        self.rows = loaded.rows  # papers.json order: BM25 document i, and for date-ordered versions vector id i
        self.keys = np.array([r["key"] for r in self.rows], dtype=np.int64)  # vector id of each position
        self._windows: dict[tuple[int, int], WindowLexical] = {}
        self._lock = threading.Lock()

    @property
    def lexical(self) -> LexicalIndex:
        if self.loaded.lexical is None:
            raise MatcherUnavailable(f"index {self.loaded.version} has no lexical index (built before the hybrid "
                                     "matcher); use matcher=dense or rebuild with `hindsight index build`")
        return self.loaded.lexical

    def dense(self, queries: np.ndarray, k: int, allowed: Allowed = None) -> list[list[tuple[int, float]]]:
        return self.loaded.search_positions(queries, k, allowed=allowed)

    def vectors(self, positions: Sequence[int]) -> np.ndarray:
        """The papers' vectors, read back from the vector index."""
        out = stored_vectors(self.loaded.index, self.keys[np.asarray(positions, dtype=np.int64)])
        if out is None:
            raise MatcherUnavailable(f"index {self.loaded.version} ({self.loaded.manifest['index'].get('kind')}) "
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
