"""Stored vectors of a version's papers, read back from its FAISS index (the hybrid matcher's facet cosines)."""

import numpy as np


def stored_vectors(vector_index, keys: np.ndarray) -> np.ndarray | None:
    """The vectors stored under these ids (exact for flat indexes, decoded codes for IVF ones), or None when the
    index cannot return them (e.g. a remote Qdrant collection)."""
    index = getattr(vector_index, "index", None)
    if index is None:
        return None
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    try:
        return np.asarray(index.reconstruct_batch(keys), dtype=np.float32)
    except RuntimeError:
        pass
    try:  # an IVF index reconstructs through its direct map, built once on first use
        import faiss

        faiss.extract_index_ivf(index).make_direct_map()
        return np.asarray(index.reconstruct_batch(keys), dtype=np.float32)
    except (RuntimeError, AttributeError):
        return None
