"""The vector-index interface: add, search, save, load."""

from pathlib import Path
from typing import Protocol

import numpy as np


class VectorIndex(Protocol):
    kind: str  # e.g. "faiss-flat-ip"

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        """Add L2-normalised float32 vectors under int64 ids."""
        ...

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Return (similarities, ids), each (n, k); missing slots have id -1."""
        ...

    def save(self, folder: Path) -> list[Path]:
        """Write the index into folder; return the files written."""
        ...

    def __len__(self) -> int: ...
