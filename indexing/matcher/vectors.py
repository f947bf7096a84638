"""Stored vectors of a version's papers, read back from its vector index (the hybrid matcher's facet cosines)."""

import numpy as np

from indexing.vectorindex.base import VectorIndex


def stored_vectors(vector_index: VectorIndex, keys: np.ndarray) -> np.ndarray | None:
    """The vectors stored under these ids, or None when the index can never return them (VectorIndex.vectors)."""
    return vector_index.vectors(np.ascontiguousarray(keys, dtype=np.int64))
