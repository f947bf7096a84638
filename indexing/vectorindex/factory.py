"""Open a published index by the `index` block of its manifest, whichever backend wrote it."""

from pathlib import Path

from indexing.vectorindex.base import VectorIndex
from indexing.vectorindex.faiss_index import FaissIndex


def open_index(folder: Path, spec: dict) -> VectorIndex:
    if spec.get("kind") == "qdrant":
        from indexing.vectorindex.qdrant import QdrantIndex  # qdrant-client is the optional `scale` extra

        return QdrantIndex.load(folder, spec)
    return FaissIndex.load(folder, spec)
