"""Qdrant behind the vector-index protocol: one collection per index version, an alias flipped on publish.

Point id = the paper's position in the version's papers.json (as in the FAISS index), with a payload holding that
position, the publication date and the built impact; a window is a range filter on the position. Vectors are stored
with the DOT distance: they are L2-normalised, so the scores are the cosines the FAISS path returns.

`url=` talks to a Qdrant server or cluster, which any number of processes share. Local mode (`path=` a folder,
by default $HINDSIGHT_HOME/qdrant) runs inside this process: it loads the folder's collections into memory, scans
them exactly, and locks the folder to one process. One client per folder is kept per process (a build started by
the API and the serving share it); a second process is refused with LocalModeLocked.
"""

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import orjson
from qdrant_client import QdrantClient, models

from indexing.vectorindex.base import Allowed, IndexUnavailable

SPEC = "qdrant.json"  # what a version folder holds instead of the vectors: where the collection lives
UPLOAD_BATCH = 1024
QUERY_BATCH = 256
POSITION = "position"  # payload key of the paper's position (= point id), indexed for range filters
DEFAULT_ALIAS = "hindsight-current"
DEFAULT_PREFIX = "hindsight"

_local_clients: dict[Path, QdrantClient] = {}
_local_lock = threading.Lock()


class LocalModeLocked(IndexUnavailable):
    """Another process holds the local-mode folder."""


def connect(*, url: str | None = None, path: str | Path | None = None, api_key: str | None = None) -> QdrantClient:
    """A server by URL, else the process's one local-mode client of that folder."""
    if url:
        return QdrantClient(url=url, api_key=api_key)
    if path is None:
        raise ValueError("Qdrant needs url= (a server) or path= (local mode)")
    folder = Path(path).resolve()
    with _local_lock:
        client = _local_clients.get(folder)
        if client is None:
            try:
                client = QdrantClient(path=str(folder))
            except RuntimeError as exc:
                if "already accessed" not in str(exc):
                    raise
                raise LocalModeLocked(
                    f"the Qdrant local-mode folder {folder.name}/ is in use by another process (local mode locks "
                    "its folder to one process: stop that process, e.g. `hindsight serve`, or use a Qdrant "
                    "server with --qdrant-url / HINDSIGHT_QDRANT_URL)") from None
            _local_clients[folder] = client
        return client


def release(path: str | Path) -> None:
    """Close this process's local-mode client of a folder, freeing its lock for another process."""
    with _local_lock:
        client = _local_clients.pop(Path(path).resolve(), None)
    if client is not None:
        client.close()


def _api_key() -> str | None:
    from indexing.settings import get_settings

    key = get_settings().index.qdrant_api_key
    return key.get_secret_value() if key else None


@atexit.register
def _release_all() -> None:
    """Close local clients while the interpreter can still run their close (else a noisy __del__ at exit)."""
    for folder in list(_local_clients):
        release(folder)


def collection_name(prefix: str, version: str) -> str:
    return f"{prefix}-{version}"


def unavailable(exc: Exception, where: str) -> IndexUnavailable:
    """A client error as the reason an API answer gives (no traceback, no stack of transport errors)."""
    if isinstance(exc, IndexUnavailable):
        return exc
    text = str(exc).splitlines()[0] if str(exc) else ""
    return IndexUnavailable(f"Qdrant {where} is unavailable ({type(exc).__name__}: {text[:200]})")


class QdrantIndex:
    kind = "qdrant"
    factory = "qdrant:dot"

    def __init__(self, client: QdrantClient, collection: str, *, url: str | None = None,
                 path: Path | None = None, alias: str = DEFAULT_ALIAS, local_name: str | None = None) -> None:
        self.client, self.collection, self.url, self.path, self.alias = client, collection, url, path, alias
        where = {"url": url} if url else {"local": local_name or (path.name if path else None)}
        self.params: dict = {"collection": collection, "alias": alias, **where}

    @property
    def where(self) -> str:
        return f"server {self.url}" if self.url else f"local folder {self.params.get('local')}/"

    @classmethod
    def create(cls, client: QdrantClient, dim: int, collection: str, *, url: str | None = None,
               path: Path | None = None, alias: str = DEFAULT_ALIAS) -> "QdrantIndex":
        """A new, empty collection; an existing one of that name is an error (versions are immutable)."""
        if client.collection_exists(collection):
            raise ValueError(f"Qdrant collection {collection!r} exists already; each index version gets its own")
        client.create_collection(collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.DOT))
        if url:  # servers filter a window through this index; local mode scans (and would warn)
            client.create_payload_index(collection, POSITION, field_schema=models.IntegerIndexParams(
                type=models.IntegerIndexType.INTEGER, lookup=False, range=True))
        return cls(client, collection, url=url, path=path, alias=alias)

    @classmethod
    def load(cls, folder: Path, spec: dict) -> "QdrantIndex":
        """Open the collection a version folder names; a local-mode folder is found beside the indexes folder
        (HINDSIGHT_HOME/<local>), so a moved HINDSIGHT_HOME keeps working."""
        url = spec.get("url")
        path = None if url else folder.resolve().parent.parent / spec["local"]
        where = f"server {url}" if url else f"local folder {spec.get('local')}/"
        if path is not None and not path.is_dir():
            raise IndexUnavailable(f"Qdrant {where} is missing (removed?); rebuild with "
                                   "`hindsight index build --backend qdrant`")
        try:
            client = connect(url=url, path=path, api_key=_api_key() if url else None)
            exists = client.collection_exists(spec["collection"])
        except Exception as exc:  # the client raises transport, HTTP and runtime errors alike
            raise unavailable(exc, where) from None
        if not exists:
            raise IndexUnavailable(f"Qdrant collection {spec['collection']!r} is gone from the {where}; rebuild "
                                   "with `hindsight index build --backend qdrant`")
        return cls(client, spec["collection"], url=url, path=path, alias=spec.get("alias", DEFAULT_ALIAS),
                   local_name=spec.get("local"))

    def _check_local(self) -> None:
        # local mode serves from memory; a removed folder means the store is gone: say so rather than answer
        if self.path is not None and not self.path.is_dir():
            raise IndexUnavailable(f"Qdrant {self.where} was removed while serving; rebuild with "
                                   "`hindsight index build --backend qdrant`")

    def add(self, vectors: np.ndarray, ids: np.ndarray, payloads: list[dict] | None = None) -> None:
        """Upload vectors under ids; each payload gets the id as its position (extra payload fields: payloads)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) and ids.min() < 0:
            raise ValueError("Qdrant point ids must be non-negative integers")
        if payloads is not None and len(payloads) != len(ids):
            raise ValueError(f"{len(payloads)} payloads for {len(ids)} vectors")
        with _bulk_local_writes(self.client, self.collection):
            for i in range(0, len(ids), UPLOAD_BATCH):
                chunk = ids[i:i + UPLOAD_BATCH].tolist()
                extra = payloads[i:i + UPLOAD_BATCH] if payloads is not None else [{}] * len(chunk)
                self.client.upsert(self.collection, points=models.Batch(
                    ids=chunk, vectors=vectors[i:i + UPLOAD_BATCH].tolist(),
                    payloads=[{**e, POSITION: p} for p, e in zip(chunk, extra)]), wait=True)

    def search(self, queries: np.ndarray, k: int, allowed: Allowed = None) -> tuple[np.ndarray, np.ndarray]:
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        sims = np.full((len(queries), k), -np.inf, dtype=np.float32)
        ids = np.full((len(queries), k), -1, dtype=np.int64)
        window = None
        if allowed is not None:
            lo, hi = int(allowed[0]), int(allowed[1])
            if hi <= lo:
                return sims, ids
            window = models.Filter(must=[models.FieldCondition(key=POSITION, range=models.Range(gte=lo, lt=hi))])
        self._check_local()
        try:
            for start in range(0, len(queries), QUERY_BATCH):
                requests = [models.QueryRequest(query=q.tolist(), limit=k, filter=window, with_payload=False)
                            for q in queries[start:start + QUERY_BATCH]]
                answers = self.client.query_batch_points(self.collection, requests=requests)
                for row, answer in enumerate(answers, start=start):
                    for col, point in enumerate(answer.points):
                        sims[row, col] = point.score
                        ids[row, col] = int(point.id)
        except Exception as exc:
            raise unavailable(exc, self.where) from None
        return sims, ids

    def vectors(self, ids: np.ndarray) -> np.ndarray | None:
        """The stored vectors, exact (Qdrant keeps the float32 originals)."""
        ids = np.asarray(ids, dtype=np.int64)
        self._check_local()
        try:
            records = self.client.retrieve(self.collection, ids=sorted(set(ids.tolist())), with_vectors=True,
                                           with_payload=False)
        except Exception as exc:
            raise unavailable(exc, self.where) from None
        found = {int(r.id): r.vector for r in records}
        missing = [int(i) for i in ids if int(i) not in found]
        if missing:
            raise KeyError(f"ids not in Qdrant collection {self.collection!r}: {missing[:10]}")
        return np.array([found[int(i)] for i in ids], dtype=np.float32).reshape(len(ids), -1)

    def save(self, folder: Path) -> list[Path]:
        """The vectors stay in Qdrant; the folder records where."""
        path = folder / SPEC
        path.write_bytes(orjson.dumps(self.params))
        return [path]

    def publish(self, alias: str | None = None) -> str | None:
        """Point alias at this collection in one atomic alias update: readers see the old or the new, never none.
        Returns the collection it pointed at before (None if it did not exist)."""
        alias = alias or self.alias
        before = alias_target(self.client, alias)
        operations: list = []
        if before is not None:
            operations.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
        operations.append(models.CreateAliasOperation(create_alias=models.CreateAlias(
            collection_name=self.collection, alias_name=alias)))
        self.client.update_collection_aliases(change_aliases_operations=operations)
        return before

    def describe(self) -> dict:
        """Kind, collection, alias and where the alias points now (a round trip: it doubles as a health check)."""
        self._check_local()
        try:
            target = alias_target(self.client, self.alias)
        except Exception as exc:
            raise unavailable(exc, self.where) from None
        return {"kind": self.kind, **self.params, "alias_target": target}

    def drop(self) -> None:
        """Delete this version's collection (a failed build's or a pruned version's)."""
        self.client.delete_collection(self.collection)

    def close(self) -> None:
        """Close a server client; a local-mode client stays open for the process (release() frees it)."""
        if self.url:
            self.client.close()

    def __len__(self) -> int:
        self._check_local()
        try:
            return int(self.client.count(self.collection, exact=True).count)
        except Exception as exc:
            raise unavailable(exc, self.where) from None


@contextmanager
def _bulk_local_writes(client: QdrantClient, collection: str) -> Iterator[None]:
    """Local mode commits every point to its SQLite file with an fsync (30 ms a point on a busy disk here: 15 min
    for 27k papers). During an upload, commit without syncing, then make it durable with one synced commit; an
    upload cut short leaves an unpublished collection, which the build drops. A server client is left alone."""
    collection_obj = getattr(getattr(client, "_client", None), "collections", {}).get(collection)
    storage = getattr(getattr(collection_obj, "storage", None), "storage", None)  # qdrant-client 1.20 internals
    if storage is None:
        yield
        return
    storage.execute("PRAGMA synchronous=OFF")
    try:
        yield
    finally:
        storage.execute("PRAGMA synchronous=FULL")
        with storage:  # an empty synced transaction: the file's earlier unsynced writes reach the disk with it
            storage.execute("CREATE TABLE IF NOT EXISTS points (id TEXT PRIMARY KEY, point BLOB)")


def restore_alias(client: QdrantClient, alias: str, collection: str | None) -> None:
    """Point alias back at collection (a rollback after a failed publish), or delete it when there was none."""
    operations: list = []
    if alias_target(client, alias) is not None:
        operations.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
    if collection is not None:
        operations.append(models.CreateAliasOperation(create_alias=models.CreateAlias(
            collection_name=collection, alias_name=alias)))
    if operations:
        client.update_collection_aliases(change_aliases_operations=operations)


def alias_target(client: QdrantClient, alias: str) -> str | None:
    """The collection an alias points at, if any."""
    for a in client.get_aliases().aliases:
        if a.alias_name == alias:
            return a.collection_name
    return None
