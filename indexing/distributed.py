"""Distributed embedding on Ray Data: embed what the cache lacks, write Parquet shards, merge them into the cache.

The shards hold (content_hash, revision, vector); the merge inserts by the cache's primary key
(model, revision, content_hash) with INSERT OR IGNORE, so a retried worker, a shard written twice or a merge
that is run again never duplicates a row. `embed_with_cache` then finds every vector cached.
"""

import math
import os
import shutil
import uuid
from types import SimpleNamespace
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import CursorResult, select
from sqlalchemy.dialects.sqlite import insert

from indexing.cachekey import text_hash
from indexing.db import session_scope
from indexing.embedders import Embedder, join
from indexing.embedders.base import cache_revision
from indexing.models import Embedding, utcnow
from indexing.settings import Settings
from indexing.vectorindex.shards import vector_array, vectors_of

Progress = Callable[[str, int, int], None]
BLOCK_ROWS = 1024  # rows per dataset block: small enough that every actor gets work, large enough to batch well
LOOKUP_CHUNK = 500


class RayUnavailable(RuntimeError):
    """Ray is not installed or could not start / connect."""


class EncoderActor:
    """One per Ray worker: loads the model once, then encodes batches of (content_hash, text)."""

    def __init__(self, model: str, settings: dict, batch_size: int, backend: str | None = None) -> None:
        from indexing.embedders import load_embedder

        # the driver's backend, not the worker's `auto`: the merge accepts only the build's own revision
        self.embedder = load_embedder(model, Settings(**settings), backend=backend)
        self.batch_size = batch_size

    def __call__(self, batch: pa.Table) -> pa.Table:
        vectors = self.embedder.encode(batch["text"].to_pylist(), batch_size=self.batch_size)
        return pa.table({
            "content_hash": batch["content_hash"],
            "revision": pa.array([self.embedder.revision] * batch.num_rows, type=pa.string()),
            "vector": vector_array(vectors),
        })


def cached_hashes(db_path: Path, embedder: Embedder, hashes: Iterable[str]) -> set[str]:
    """The hashes the embedding cache already holds for this model and revision."""
    unique = list(dict.fromkeys(hashes))
    found: set[str] = set()
    with session_scope(db_path) as session:
        for i in range(0, len(unique), LOOKUP_CHUNK):
            found.update(session.scalars(select(Embedding.content_hash).where(
                Embedding.model == embedder.key, Embedding.revision == cache_revision(embedder),
                Embedding.content_hash.in_(unique[i:i + LOOKUP_CHUNK]))))
    return found


def merge_shards(paths: Iterable[Path], *, db_path: Path, embedder: Embedder) -> int:
    """Insert the shards' vectors into the cache by key, one transaction per shard; returns rows new to the cache."""
    added = 0
    for path in paths:
        table = pq.read_table(path)
        if table.num_rows == 0:
            continue
        revisions = set(table["revision"].unique().to_pylist())
        if revisions != {embedder.revision}:
            raise RuntimeError(f"shard {path.name} was embedded with model revision(s) {sorted(revisions)}, "
                               f"this build uses {embedder.revision}: every Ray worker must load the same weights")
        vectors = vectors_of(table["vector"], embedder.dim)
        norms = np.linalg.norm(vectors, axis=1)
        if not np.all(np.isfinite(vectors)) or np.any(np.abs(norms - 1) > 1e-3):
            raise RuntimeError(f"shard {path.name} holds vectors that are not finite and L2-normalised")
        now = utcnow()
        rows = [{"model": embedder.key, "revision": cache_revision(embedder), "content_hash": h,
                 "vector": np.ascontiguousarray(v).tobytes(), "created_at": now}
                for h, v in zip(table["content_hash"].to_pylist(), vectors)]
        with session_scope(db_path) as session:
            for i in range(0, len(rows), LOOKUP_CHUNK):
                result = session.execute(insert(Embedding).values(rows[i:i + LOOKUP_CHUNK]).on_conflict_do_nothing(
                    index_elements=["model", "revision", "content_hash"]))
                if not isinstance(result, CursorResult):
                    raise TypeError(f"an INSERT returned {type(result).__name__}, which has no row count")
                added += max(result.rowcount, 0)
    return added


def start_ray(address: str | None = None, *, num_cpus: int | None = None) -> bool:
    """Connect to a cluster by address, or start a local loopback-only instance; True when this call started it."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("Ray is not installed: pip install 'hindsight[scale]'") from None
    if ray.is_initialized():
        return False
    try:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False,
                     _node_ip_address="127.0.0.1", log_to_driver=False)
    except Exception as exc:  # ray raises ConnectionError, RuntimeError, ValueError... all mean "no cluster"
        raise RayUnavailable(f"Ray could not start ({type(exc).__name__}: {exc})") from exc
    return True


def _worker_settings(settings: Settings, device: str) -> dict:
    return {"index": {"device": device, "specter2_base": settings.index.specter2_base,
                      "specter2_adapter": settings.index.specter2_adapter}}


def embed_dataset(dataset, embedder: Embedder, *, settings: Settings, shards_dir: Path, actors: int | None = None,
                  encoder: type = EncoderActor) -> list[Path]:
    """Encode a Ray dataset of (content_hash, text) with a pool of stateful encoders; write Parquet shards."""
    import ray

    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    # one GPU per actor when the cluster has them; else one CPU each
    size = actors or (gpus if gpus else max(1, int(resources.get("CPU", 1))))
    out = dataset.map_batches(
        encoder, batch_format="pyarrow", batch_size=settings.index.batch_size, concurrency=size,
        num_gpus=1 if gpus else 0, num_cpus=0 if gpus else 1,
        fn_constructor_kwargs={"model": embedder.key, "settings": _worker_settings(
            settings, "cuda" if gpus else settings.index.device), "batch_size": settings.index.batch_size,
            "backend": getattr(embedder, "backend", None)},
    )
    shards_dir.mkdir(parents=True, exist_ok=True)
    # writing is I/O: without num_cpus=0 the write tasks wait for the encoders to release every CPU
    out.write_parquet(str(shards_dir), ray_remote_args={"num_cpus": 0})
    return sorted(shards_dir.glob("*.parquet"))


def _blocks(hashes: list[str], texts: list[str], batch_size: int) -> list[pa.Table]:
    """At least about 8 blocks when there is enough work, so every actor gets some."""
    rows = min(BLOCK_ROWS, max(batch_size, math.ceil(len(hashes) / 8)))
    return [pa.table({"content_hash": hashes[i:i + rows], "text": texts[i:i + rows]})
            for i in range(0, len(hashes), rows)]


def _shards_root(settings: Settings, embedder: Embedder) -> Path:
    return settings.home / "embed-shards" / embedder.key / embedder.revision


def embed_on_ray(embedder: Embedder, texts: list[str], *, settings: Settings, address: str | None = None,
                 shards_dir: Path | None = None, actors: int | None = None, encoder: type = EncoderActor,
                 progress: Progress | None = None) -> int:
    """Fill the embedding cache for texts through Ray; returns the rows added. Shards left by a failed run merge
    first."""
    root = shards_dir or _shards_root(settings, embedder)
    leftovers = sorted(root.rglob("*.parquet")) if root.exists() else []
    added = merge_shards(leftovers, db_path=settings.db_path, embedder=embedder) if leftovers else 0
    by_hash = {text_hash(embedder, t): t for t in texts}
    known = cached_hashes(settings.db_path, embedder, by_hash)
    missing = [h for h in by_hash if h not in known]
    if progress:
        progress("embed", 0, len(missing))
    if missing:
        import ray

        started = start_ray(address)
        try:
            run_dir = root / f"run-{uuid.uuid4().hex[:12]}"
            dataset = ray.data.from_arrow(_blocks(missing, [by_hash[h] for h in missing], settings.index.batch_size))
            shards = embed_dataset(dataset, embedder, settings=settings, shards_dir=run_dir, actors=actors,
                                   encoder=encoder)
        finally:
            if started:
                ray.shutdown()
        added += merge_shards(shards, db_path=settings.db_path, embedder=embedder)
        still = set(missing) - cached_hashes(settings.db_path, embedder, missing)
        if still:
            raise RuntimeError(f"Ray embedding left {len(still)} of {len(missing)} texts without a vector; "
                               f"the shards stay in {run_dir} and merge on the next run")
        if progress:
            progress("embed", len(missing), len(missing))
    shutil.rmtree(root, ignore_errors=True)
    return added


def _arrow(batch: object) -> pa.Table:
    """A batch Ray was asked for as pyarrow, typed as one."""
    if not isinstance(batch, pa.Table):
        raise TypeError(f"Ray returned a {type(batch).__name__} batch where a pyarrow Table was asked for")
    return batch


def export_dataset(path: str, embedder: Embedder, *, db_path: Path):
    """Papers from Parquet or JSONL exports (title, abstract columns) as a Ray dataset of uncached
    (content_hash, text)."""
    import ray

    reader = ray.data.read_parquet if str(path).endswith(".parquet") or Path(path).is_dir() else ray.data.read_json
    shim = SimpleNamespace(key=embedder.key, sep=embedder.sep)  # all that join and text_hash read; ships to workers

    def to_texts(batch: pa.Table) -> pa.Table:
        abstracts = batch["abstract"].to_pylist() if "abstract" in batch.column_names else [None] * batch.num_rows
        texts = [join(shim, t, a) for t, a in zip(batch["title"].to_pylist(), abstracts)]
        return pa.table({"content_hash": [text_hash(shim, t) for t in texts], "text": texts})

    dataset = reader(path).map_batches(to_texts, batch_format="pyarrow")
    hashes = [h for b in dataset.select_columns(["content_hash"]).iter_batches(batch_format="pyarrow")
              for h in _arrow(b)["content_hash"].to_pylist()]
    known = cached_hashes(db_path, embedder, hashes)
    return dataset.filter(lambda row: row["content_hash"] not in known)
