"""FAISS inner-product index over normalised vectors, keyed by the papers' stable integer ids."""

from pathlib import Path

import faiss
import numpy as np

FILENAME = "index.faiss"


def factory_for(n: int, dim: int) -> str:
    """Exact search while it is fast; HNSW beyond (see bench/index_scale.py)."""
    return "IDMap2,Flat" if n <= 200_000 else "IDMap2,HNSW32,Flat"


class FaissIndex:
    def __init__(self, index: faiss.Index, factory: str) -> None:
        self.index, self.factory = index, factory
        self.kind = f"faiss:{factory}"

    @classmethod
    def create(cls, dim: int, *, n_hint: int = 0, factory: str | None = None) -> "FaissIndex":
        factory = factory or factory_for(n_hint, dim)
        return cls(faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT), factory)

    @classmethod
    def load(cls, folder: Path, factory: str) -> "FaissIndex":
        return cls(faiss.read_index(str(folder / FILENAME)), factory)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                np.ascontiguousarray(ids, dtype=np.int64))

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = max(1, min(k, self.index.ntotal)) if self.index.ntotal else k
        return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)

    def save(self, folder: Path) -> list[Path]:
        path = folder / FILENAME
        faiss.write_index(self.index, str(path))
        return [path]

    def __len__(self) -> int:
        return int(self.index.ntotal)
