"""Vectors through the embedding cache: only the texts the cache lacks are embedded, and those are stored as they
finish. The build, the dense calibration and the hybrid matcher's fit all embed through it."""

from collections.abc import Callable
from pathlib import Path

import numpy as np
from sqlalchemy import select

from indexing.cachekey import text_hash
from indexing.db import session_scope
from indexing.embedders import Embedder
from indexing.embedders.base import cache_revision
from indexing.embedders.workers import encoder as workers_encoder
from indexing.models import Embedding

Progress = Callable[[str, int, int], None]  # (stage, advance, total)
CACHE_CHUNK = 256


def embed_with_cache(embedder: Embedder, texts: list[str], *, db_path: Path, batch_size: int = 32,
                     progress: Progress | None = None, workers: int = 0) -> tuple[np.ndarray, int]:
    """Vectors for texts, embedding only those the cache lacks; returns (vectors, newly embedded). `workers`
    is the process layout (embedders/workers.py; 0 decides from the machine and the number to embed)."""
    hashes = [text_hash(embedder, t) for t in texts]
    revision = cache_revision(embedder)
    found: dict[str, np.ndarray] = {}
    with session_scope(db_path) as session:
        unique = list(dict.fromkeys(hashes))
        for i in range(0, len(unique), 500):
            rows = session.execute(select(Embedding.content_hash, Embedding.vector).where(
                Embedding.model == embedder.key, Embedding.revision == revision,
                Embedding.content_hash.in_(unique[i:i + 500])))
            for h, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == embedder.dim:
                    found[h] = vec
    missing = _first_occurrences([i for i, h in enumerate(hashes) if h not in found], hashes)
    if progress:
        progress("embed", 0, len(missing))
    # chunks are committed as they finish, so an interrupted build keeps what it paid for
    with workers_encoder(embedder, len(missing), workers) as encode:
        for start in range(0, len(missing), CACHE_CHUNK):
            chunk = missing[start:start + CACHE_CHUNK]
            vecs = encode([texts[i] for i in chunk], batch_size=batch_size,
                          progress=(lambda n: progress("embed", n, len(missing))) if progress else None)
            with session_scope(db_path) as session:
                for i, vec in zip(chunk, vecs):
                    session.merge(Embedding(model=embedder.key, revision=revision, content_hash=hashes[i],
                                            vector=np.ascontiguousarray(vec, dtype=np.float32).tobytes()))
                    found[hashes[i]] = vec
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    for i, h in enumerate(hashes):
        out[i] = found[h]
    return out, len(missing)


def _first_occurrences(indices: list[int], hashes: list[str]) -> list[int]:
    seen: set[str] = set()
    kept = []
    for i in indices:
        if hashes[i] not in seen:
            seen.add(hashes[i])
            kept.append(i)
    return kept
