"""Embedding a build in worker processes: one torch thread each, batches spread over them.

On a 2-core machine one process with two intra-op threads loses to two processes with one thread each (measured
1.6x on MiniLM bf16, bench/build_speed.py): the small per-layer products of a batch do not keep two threads busy,
and on a shared machine a spinning thread waits for its partner. Each worker builds the same embedder from its
spec, checks the revision matches, and returns vectors per length-sorted batch, in order.
"""

import multiprocessing
from collections.abc import Callable, Iterator
from typing import Any, cast
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

import numpy as np

from indexing.embedders.base import Embedder, length_sorted_batches
from indexing.embedders.cpu import cores
from indexing.embedders.runtime import TORCH_BACKENDS

MIN_TEXTS = 512  # below this the workers' start-up (a model load each) costs more than it saves
CLASSES = {"minilm": ("indexing.embedders.minilm", "MiniLMEmbedder"),
           "specter2": ("indexing.embedders.specter2", "Specter2Embedder")}

_worker: Embedder | None = None


def plan(embedder: Embedder, n_texts: int, workers: int = 0) -> int:
    """How many worker processes to use (0 = embed in this process); `workers` 0 means decide. Only torch backends
    get workers, even when asked: ONNX Runtime and openvino-int8 already run on every core of this process, and a
    worker each would put cores x workers threads on the cores."""
    if getattr(embedder, "backend", None) not in TORCH_BACKENDS:
        return 0
    if workers:
        return workers if workers > 1 else 0
    if getattr(embedder, "device", "cpu") != "cpu" or not hasattr(embedder, "spec") or n_texts < MIN_TEXTS:
        return 0
    n = cores()
    return n if n > 1 else 0


def _init(key: str, spec: dict, revision: str, threads: int) -> None:
    global _worker
    import importlib

    import torch

    torch.set_num_threads(threads)
    module, name = CLASSES[key]
    _worker = getattr(importlib.import_module(module), name)(**spec)
    if _worker.revision != revision:
        raise RuntimeError(f"worker loaded {key} revision {_worker.revision}, the build expects {revision}")


def _encode(texts: list[str]) -> np.ndarray:
    if _worker is None:
        raise RuntimeError("the embedding worker was not initialised")
    return _worker.encode(texts, batch_size=len(texts))


@contextmanager
def encoder(embedder: Embedder, n_texts: int, workers: int = 0) -> Iterator[Callable[..., np.ndarray]]:
    """An `encode(texts, batch_size=, progress=)` that uses worker processes when the plan says so."""
    n = plan(embedder, n_texts, workers)
    if not n:
        yield embedder.encode
        return
    threads = max(1, cores() // n)
    # spawn, not fork: the parent may hold torch/OpenMP thread pools and server threads that a fork would break
    pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_init,
                               initargs=(embedder.key, cast(Any, embedder).spec(), embedder.revision, threads))

    def encode(texts: list[str], *, batch_size: int = 32, progress=None) -> np.ndarray:
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        batches = length_sorted_batches(texts, batch_size)
        for batch, vectors in zip(batches, pool.map(_encode, [[texts[i] for i in b] for b in batches])):
            out[batch] = vectors
            if progress:
                progress(len(batch))
        return out

    try:
        yield encode
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
