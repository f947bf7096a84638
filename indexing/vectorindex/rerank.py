"""Exact re-rank for compressed IVF indexes: float16 copies of the vectors in a memmapped .npy beside the index.

PQ codes (dim/8 bytes a vector) rank the true neighbours only roughly (recall@20 about 0.55 whatever nprobe at
1M, docs/scaling.md) but do put them among the first few hundred candidates. Re-scoring those candidates with the
stored vectors recovers the exact order at 2 bytes a dimension on disk and one page read per candidate. Row i of
the store is the vector of id i: the ids are positions 0..n-1, as in every date-ordered version.
"""

import shutil
from pathlib import Path

import numpy as np

FILENAME = "rerank.f16.npy"
DTYPE = np.float16
CANDIDATES = (40, 80, 160, 320, 640)  # candidates a query re-scores, tried in this order when tuning


class RerankStore:
    def __init__(self, matrix: np.ndarray, path: Path) -> None:
        self.matrix, self.path = matrix, path

    @classmethod
    def create(cls, folder: Path, n: int, dim: int) -> "RerankStore":
        path = folder / FILENAME
        return cls(np.lib.format.open_memmap(path, mode="w+", dtype=DTYPE, shape=(n, dim)), path)

    @classmethod
    def open(cls, folder: Path) -> "RerankStore":
        path = folder / FILENAME
        matrix = np.load(path, mmap_mode="r")
        if matrix.dtype != DTYPE or matrix.ndim != 2:
            raise ValueError(f"{FILENAME} holds {matrix.dtype} of shape {matrix.shape}, expected 2-d {DTYPE.__name__}")
        return cls(matrix, path)

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def put(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) and (ids.min() < 0 or ids.max() >= len(self)):
            raise ValueError(f"re-rank store rows are ids 0..{len(self) - 1}; got ids {ids.min()}..{ids.max()}")
        self.matrix[ids] = vectors.astype(DTYPE)

    def get(self, ids: np.ndarray) -> np.ndarray:
        """float32 vectors of ids, in the order asked; an id outside the store is a KeyError."""
        ids = np.asarray(ids, dtype=np.int64)
        bad = ids[(ids < 0) | (ids >= len(self))]
        if len(bad):
            raise KeyError(f"ids not in this index: {bad[:10].tolist()}")
        return np.asarray(self.matrix[ids], dtype=np.float32)

    def rerank(self, queries: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best of each row's candidate ids (-1 = none) by exact inner product, as (sims, ids)."""
        valid = ids >= 0
        vectors = np.asarray(self.matrix[np.where(valid, ids, 0)], dtype=np.float32)  # (n, candidates, dim)
        sims = np.einsum("qcd,qd->qc", vectors, queries)
        sims[~valid] = -np.inf
        order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        top_sims, top_ids = np.take_along_axis(sims, order, 1), np.take_along_axis(ids, order, 1)
        top_ids[np.isneginf(top_sims)] = -1
        return top_sims.astype(np.float32), top_ids

    def flush(self) -> None:
        if isinstance(self.matrix, np.memmap) and self.matrix.mode != "r":
            self.matrix.flush()

    def move_to(self, folder: Path) -> Path:
        """Into a version folder (a rename: the open map follows the inode), read-only from then on."""
        target = folder / FILENAME
        self.flush()
        if self.path != target:
            shutil.move(self.path, target)
            self.path = target
        self.matrix = np.load(target, mmap_mode="r")
        return target
