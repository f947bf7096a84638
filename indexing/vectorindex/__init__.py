"""Vector-index backends behind one interface."""

from indexing.vectorindex.base import VectorIndex
from indexing.vectorindex.faiss_index import FaissIndex

__all__ = ["FaissIndex", "VectorIndex"]
