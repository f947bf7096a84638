"""One single-thread copy of a model per core, each fed from its own thread (inference releases the GIL): the layout
of the torch worker processes without their start-up, a model load each. Used by the OpenVINO int8 IR
(openvino_backend.py) and ONNX Runtime (onnx_backend.py); a text per inference where the backend's int8 rounds by
its batch (solo.py), so a request's few texts (an idea's facets) run on every core at once.
"""

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from indexing.embedders import solo
from indexing.embedders.base import normalise


class PerCoreEncoder:
    """Copies of one model, one per core, each run by one thread at a time; encode() is safe to call from several
    threads at once (a copy is taken from a queue for each inference, the tokenizer is called under a lock: a fast
    tokenizer called from two threads raises "Already borrowed"). Vectors come back in input order, normalised.

    A subclass gives the copies and _run_copy (one copy's pooled vectors for one batch of inputs)."""

    name = "percore"

    def __init__(self, copies: list[Any], tokenize: Callable[[list[str]], dict[str, np.ndarray]], *, dim: int,
                 max_tokens: int, pad_id: int = 0, wide: Any = None) -> None:
        """wide: a copy that spreads one inference over every core, for a call of fewer texts than twice the copies
        (a request's facets), where it is faster than the copies; it must give the copies' bits."""
        self.streams = len(copies)
        self._wide = wide
        self.dim = dim
        self._copies: queue.SimpleQueue = queue.SimpleQueue()
        for copy in copies:
            self._copies.put(copy)
        self._tokenize = tokenize
        self._tokenizer_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(self.streams, thread_name_prefix=self.name)
        self._max_tokens = max_tokens
        self._pad_id = pad_id

    def _run_copy(self, copy: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError

    def _run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        copy = self._copies.get()
        try:
            return self._run_copy(copy, feeds)
        finally:
            self._copies.put(copy)

    def warm(self) -> None:
        """Prepare every copy for every input it may meet (a server, before its first request; nothing by default)."""

    def _warm(self, texts: list[str]) -> None:
        """Prepare the copies for these texts before their inferences (nothing by default)."""

    def encode_many(self, groups: list[list[str]]) -> list[np.ndarray]:
        """Each group's vectors; no batch mixes two groups (a text per inference), every core at once."""
        edges = np.cumsum([0] + [len(g) for g in groups])
        out = self.encode([t for g in groups for t in g])
        return [out[a:b] for a, b in zip(edges[:-1], edges[1:])]

    def encode(self, texts: list[str], *, batch_size: int = 1, progress=None) -> np.ndarray:
        """The texts' vectors at solo's padded lengths, batch_size texts of one length per inference."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._warm(texts)
        return self._infer(len(texts), solo.feeds(texts, self._tokenize, max_tokens=self._max_tokens,
                                                  batch_size=batch_size, pad_id=self._pad_id,
                                                  lock=self._tokenizer_lock), progress)

    def _infer(self, n: int, feeds: Iterable[tuple[list[int], dict[str, np.ndarray]]], progress=None) -> np.ndarray:
        """The normalised vectors of n texts, given as (their rows, their tokens) batches, run on the copies."""
        out = np.zeros((n, self.dim), dtype=np.float32)
        if self._wide is not None and n < 2 * self.streams:
            for batch, tokens in feeds:
                out[batch] = self._run_copy(self._wide, tokens)
                if progress:
                    progress(len(batch))
            return normalise(out)
        pending: deque[tuple[list[int], Future[np.ndarray]]] = deque()

        def collect() -> None:
            batch, future = pending.popleft()
            out[batch] = future.result()
            if progress:
                progress(len(batch))

        for batch, tokens in feeds:
            pending.append((batch, self._pool.submit(self._run, tokens)))
            if len(pending) > 2 * self.streams:  # tokenised batches in flight stay few, whatever the build's size
                collect()
        while pending:
            collect()
        return normalise(out)
