"""The embedder interface: texts in, L2-normalised float32 vectors out."""

import functools
import threading
from typing import Any, Protocol

import numpy as np

# One model construction at a time per process, whatever the model: transformers builds weights on a "meta" device
# inside a process-wide context while loading, so two threads constructing at once (a first scoring request and
# the first API rebuild) could end in "Cannot copy out of meta tensor; no data!". A cache alone does not help: two
# first calls both miss it and construct together.
MODEL_LOAD_LOCK = threading.RLock()


def serialised_load(fn):
    """Run a model-constructing function under MODEL_LOAD_LOCK; put it above @lru_cache, so a waiting thread
    finds the first thread's copy in the cache instead of building its own."""
    @functools.wraps(fn)
    def locked(*args, **kwargs):
        with MODEL_LOAD_LOCK:
            return fn(*args, **kwargs)
    for name in ("cache_clear", "cache_info"):  # an lru_cache below stays reachable
        if hasattr(fn, name):
            setattr(locked, name, getattr(fn, name))
    return locked


class Embedder(Protocol):
    key: str  # registry key, e.g. "minilm"
    model_id: str  # what was loaded, e.g. "sentence-transformers/all-MiniLM-L6-v2"
    revision: str  # weights fingerprint; part of the embedding cache key
    dim: int
    theta: float  # match threshold calibrated for this model only
    sep: str  # joins title/abstract and problem/method
    tokenizer: Any  # the model's own (Hugging Face) tokenizer: token counts, the window checks

    def encode(self, texts: list[str], *, batch_size: int = 32, progress=None) -> np.ndarray:
        """Return an (n, dim) float32 array of L2-normalised vectors."""
        ...

    def encode_many(self, groups: list[list[str]]) -> list[np.ndarray]:
        """Each group's vectors, as encode gives them; no batch mixes two groups (a backend that can runs them side
        by side)."""
        ...

    def warm(self) -> None:
        """Prepare for every input length before the first request (a server's start); a one-shot command does not
        call it: the backend prepares the lengths its texts need."""
        ...


# How a vector is made beyond the model's revision: each text in an inference of its own, so its vector is its text's
# alone (no batch-mate's padding or rounding). Part of the embedding cache's key only: vectors cached by builds that
# batched texts differ in their last bits, so a build never reuses them; queries made the same way match as before.
SOLO = "solo"


def cache_revision(embedder: Embedder) -> str:
    """The embedding cache's revision key for this embedder's vectors."""
    return f"{embedder.revision}/{SOLO}"


def join(embedder: Embedder, first: str, second: str | None) -> str:
    """The model's input for a (title, abstract) or (problem, method) pair."""
    first, second = (first or "").strip(), (second or "").strip()
    return f"{first}{embedder.sep}{second}" if second else first


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def length_sorted_batches(texts: list[str], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length, so padding is cheap."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
