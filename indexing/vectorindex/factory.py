"""Create, open and drop a version's vector index, whichever backend holds it.

FAISS: flat while small, IVF beyond, PQ codes with a float16 re-rank store past 2M (or the factory string given),
from vectors in memory or streamed from Parquet shards; its files live in the version folder. Qdrant: one
collection per version, in local mode (a folder) or on a server; the version folder names it. The build creates
here and drops a version it could not publish here; versions.py opens a published one here."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from indexing.vectorindex.base import VectorIndex
from indexing.vectorindex.faiss_index import FaissIndex, factory_for

if TYPE_CHECKING:  # opening a version needs neither the settings nor the builders (and their pyarrow)
    from indexing.settings import Settings

BACKENDS = ("faiss", "qdrant")


@dataclass(frozen=True)
class QdrantTarget:
    """Where a new collection goes: a server (url) or local mode (path), and the names it gets."""

    url: str | None
    path: Path | None
    api_key: str | None
    prefix: str
    alias: str


def qdrant_target(settings: "Settings", url: str | None = None) -> QdrantTarget:
    """The server url (else settings.index.qdrant_url; unset both: local mode in HINDSIGHT_HOME/qdrant)."""
    url = url or settings.index.qdrant_url
    key = settings.index.qdrant_api_key
    return QdrantTarget(url=url, path=None if url else settings.qdrant_dir,
                        api_key=key.get_secret_value() if key else None,
                        prefix=settings.index.qdrant_prefix, alias=settings.index.qdrant_alias)


def check_backend(backend: str, factory: str | None) -> None:
    """Refuse an unknown backend, or a FAISS factory string for Qdrant (ValueError saying which)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown vector backend {backend!r}; use {' or '.join(BACKENDS)}")
    if backend == "qdrant" and factory:
        raise ValueError("--factory names a FAISS index; a Qdrant collection takes no factory")


def create_index(vectors: np.ndarray, *, backend: str = "faiss", factory: str | None = None,
                 folder: Path | None = None, qdrant: QdrantTarget | None = None, version: str = "",
                 payloads: Iterable[dict] | None = None) -> VectorIndex:
    """The index of a version's vectors, id i for row i: FAISS (see create_faiss; a PQ index keeps its re-rank store
    in folder) or a new Qdrant collection named for the version (payloads: the fields a point carries besides its
    position, read only for Qdrant)."""
    check_backend(backend, factory)
    ids = np.arange(len(vectors), dtype=np.int64)
    if backend == "faiss":
        return create_faiss(vectors, ids, factory=factory, folder=folder)
    if qdrant is None:
        raise ValueError("a Qdrant index needs a server url or a local folder")
    return create_qdrant(vectors, ids, qdrant, version, payloads=None if payloads is None else list(payloads))


def create_faiss(vectors: np.ndarray, ids: np.ndarray, *, factory: str | None = None,
                 folder: Path | None = None) -> FaissIndex:
    """Flat while small, IVF trained on a sample beyond (the size picks the factory unless one is given); PQ codes
    get a float16 re-rank store in folder."""
    from indexing.vectorindex.ivf import build_in_memory

    chosen = factory or factory_for(len(ids), vectors.shape[1])
    return build_in_memory(vectors, ids, factory=chosen, rerank_dir=folder if ",PQ" in chosen else None)


def create_sharded(paths: Sequence[Path], *, dim: int, factory: str | None = None, folder: Path | None = None,
                   ondisk: bool = False, workers: int = 2, log=None) -> FaissIndex:
    """The FAISS index of Parquet vector shards (shards.py), never all in memory: the size in their footers picks
    the factory unless one is given; PQ codes get a float16 re-rank store in folder (shard ids 0..n-1), and ondisk
    merges the inverted lists into folder's mmapped index.ivfdata."""
    from indexing.vectorindex.ivf import build_from_shards
    from indexing.vectorindex.shards import shard_rows

    chosen = factory or factory_for(sum(shard_rows(paths)), dim)
    return build_from_shards(paths, dim=dim, factory=chosen, workers=workers, log=log,
                             ondisk_dir=folder if ondisk else None,
                             rerank_dir=folder if folder is not None and ",PQ" in chosen else None)


def create_qdrant(vectors: np.ndarray, ids: np.ndarray, target: QdrantTarget, version: str, *,
                  payloads: list[dict] | None = None) -> VectorIndex:
    """A new collection for the version, filled; if filling fails the collection is dropped again."""
    from indexing.vectorindex.qdrant import QdrantIndex, collection_name, connect  # the optional `scale` extra

    index = QdrantIndex.create(connect(url=target.url, path=target.path, api_key=target.api_key), vectors.shape[1],
                               collection_name(target.prefix, version), url=target.url, path=target.path,
                               alias=target.alias)
    try:
        index.add(vectors, ids, payloads=payloads)
    except BaseException:
        drop_index(index)
        raise
    return index


def open_index(folder: Path, spec: dict) -> VectorIndex:
    """A published index, by the `index` block (spec) of its manifest."""
    if spec.get("kind") == "qdrant":
        from indexing.vectorindex.qdrant import QdrantIndex  # qdrant-client is the optional `scale` extra

        return QdrantIndex.load(folder, spec)
    return FaissIndex.load(folder, spec)


def drop_index(index: VectorIndex) -> bool:
    """Delete what an index holds outside its version folder (a Qdrant collection), best effort: the store may be
    what failed, and the collection then stays, unpublished and unnamed. True when the index had such a part (the
    folder naming it is then useless too); a FAISS index lives in its folder alone."""
    drop = getattr(index, "drop", None)
    if drop is None:
        return False
    try:
        drop()
    except Exception:
        pass
    return True


def drop_version(folder: Path, spec: dict) -> None:
    """A pruned version's collection, by the `index` block of its manifest (best effort: an unreachable server
    keeps it); FAISS files go with the folder."""
    if spec.get("kind") != "qdrant":
        return
    try:
        index = open_index(folder, spec)
    except Exception:
        return
    drop_index(index)
