"""The vector-index protocol every backend (FAISS flat, FAISS IVF, Qdrant) implements.

Ids are non-negative int64; in a date-ordered version the id of a paper is its position in papers.json, so a
publication-date window is one id range and `allowed=(lo, hi)` is how every retriever restricts to it.
"""

from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from indexing.errors import NotReady

Allowed = tuple[int, int] | None


class IndexUnavailable(NotReady, RuntimeError):
    """The store behind an index cannot be reached or read now (a Qdrant server down, a local folder removed or
    locked by another process); the message says which and what to do. The service answers 503 with it."""


@runtime_checkable
class VectorIndex(Protocol):
    kind: str  # e.g. "faiss:IDMap2,Flat", "qdrant"
    factory: str  # the FAISS factory string, or "qdrant:dot"
    params: dict  # search parameters and build facts, recorded in the manifest's `index` block

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        """Add L2-normalised float32 vectors under non-negative int64 ids."""
        ...

    def search(self, queries: np.ndarray, k: int, allowed: Allowed = None) -> tuple[np.ndarray, np.ndarray]:
        """(similarities, ids), each (n, k'), best first; allowed=(lo, hi) keeps only ids in [lo, hi). k' <= k is
        min(k, ids in range) when that is known, else k; missing slots have id -1 and similarity -inf. An empty
        range answers k columns of missing slots. Raises IndexUnavailable when the store cannot be reached."""
        ...

    def vectors(self, ids: np.ndarray) -> np.ndarray | None:
        """The stored vectors of these ids, (len(ids), dim) float32 in the order asked (exact for flat and
        Qdrant, decoded codes for compressed IVF ones, exact again with a re-rank store).

        None means this index can never return stored vectors (a codec without reconstruction): callers fall back
        (the hybrid matcher then refuses). An id that is not stored raises KeyError naming it; an unreachable
        store raises IndexUnavailable. Never zeros or a partial answer."""
        ...

    def save(self, folder: Path) -> list[Path]:
        """Write the index (or where it lives) into folder; return the files written, for the manifest checksums."""
        ...

    def publish(self, alias: str) -> str | None:
        """Make this index what the backend's own readers of `alias` see, atomically; return what the alias
        pointed at before (for a rollback), or None. FAISS indexes are files in their version folder, published
        by the CURRENT pointer alone: for them this has nothing to flip and returns None."""
        ...

    def describe(self) -> dict:
        """What /readyz reports about the index being served (kind, and for Qdrant the collection and alias);
        raises IndexUnavailable when the store cannot be reached."""
        ...

    def close(self) -> None:
        """Release what the index holds (a Qdrant client); a no-op for in-process indexes."""
        ...

    def __len__(self) -> int: ...

    @classmethod
    def load(cls, folder: Path, spec: dict) -> "VectorIndex":
        """Open the index saved in folder, as the manifest's `index` block (spec) describes it."""
        ...
