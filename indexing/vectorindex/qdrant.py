"""Qdrant behind the vector-index interface: one collection per index version, an alias flipped on publish.

Local mode (`path=` a folder, or an in-process client) runs inside this process for tests and single machines;
`url=` talks to a Qdrant server or cluster. Vectors are stored with the DOT distance: they are L2-normalised,
so the scores are the same cosines the FAISS path returns.
"""

from pathlib import Path

import numpy as np
import orjson
from qdrant_client import QdrantClient, models

SPEC = "qdrant.json"  # what a version folder holds instead of the vectors: where the collection lives
UPLOAD_BATCH = 1024
QUERY_BATCH = 256


def connect(*, url: str | None = None, path: str | Path | None = None, api_key: str | None = None) -> QdrantClient:
    """A server by URL, else local mode in a folder."""
    if url:
        return QdrantClient(url=url, api_key=api_key)
    if path is None:
        raise ValueError("Qdrant needs url= (a server) or path= (local mode)")
    return QdrantClient(path=str(path))


def collection_name(prefix: str, version: str) -> str:
    return f"{prefix}-{version}"


class QdrantIndex:
    kind = "qdrant"
    factory = "qdrant:dot"

    def __init__(self, client: QdrantClient, collection: str, *, url: str | None = None,
                 path: str | None = None) -> None:
        self.client, self.collection, self.url, self.path = client, collection, url, path
        self.params: dict = {"collection": collection, **({"url": url} if url else {}), **({"path": path} if path else {})}

    @classmethod
    def create(cls, client: QdrantClient, dim: int, collection: str, *, url: str | None = None,
               path: str | None = None) -> "QdrantIndex":
        """A new, empty collection; an existing one of that name is an error (versions are immutable)."""
        if client.collection_exists(collection):
            raise ValueError(f"Qdrant collection {collection!r} exists already; each index version gets its own")
        client.create_collection(collection, vectors_config=models.VectorParams(size=dim, distance=models.Distance.DOT))
        return cls(client, collection, url=url, path=path)

    @classmethod
    def load(cls, folder: Path, spec: dict | None = None, *, client: QdrantClient | None = None) -> "QdrantIndex":
        spec = spec or orjson.loads((folder / SPEC).read_bytes())
        client = client or connect(url=spec.get("url"), path=spec.get("path"))
        if not client.collection_exists(spec["collection"]):
            raise FileNotFoundError(f"Qdrant collection {spec['collection']!r} is gone")
        return cls(client, spec["collection"], url=spec.get("url"), path=spec.get("path"))

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) and ids.min() < 0:
            raise ValueError("Qdrant point ids must be non-negative integers")
        for i in range(0, len(ids), UPLOAD_BATCH):
            chunk = ids[i:i + UPLOAD_BATCH]
            self.client.upsert(self.collection, points=models.Batch(
                ids=chunk.tolist(), vectors=vectors[i:i + UPLOAD_BATCH].tolist(),
                payloads=[{"paper": int(p)} for p in chunk]), wait=True)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        sims = np.full((len(queries), k), -np.inf, dtype=np.float32)
        ids = np.full((len(queries), k), -1, dtype=np.int64)
        for start in range(0, len(queries), QUERY_BATCH):
            requests = [models.QueryRequest(query=q.tolist(), limit=k, with_payload=True)
                        for q in queries[start:start + QUERY_BATCH]]
            for row, answer in enumerate(self.client.query_batch_points(self.collection, requests=requests),
                                         start=start):
                for col, point in enumerate(answer.points):
                    sims[row, col] = point.score
                    ids[row, col] = int(point.payload["paper"]) if point.payload else int(point.id)
        return sims, ids

    def save(self, folder: Path) -> list[Path]:
        """The vectors stay in Qdrant; the folder records where."""
        path = folder / SPEC
        path.write_bytes(orjson.dumps(self.params))
        return [path]

    def publish(self, alias: str) -> None:
        """Point alias at this collection in one atomic alias update: readers see the old or the new, never none."""
        operations: list = []
        if any(a.alias_name == alias for a in self.client.get_aliases().aliases):
            operations.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
        operations.append(models.CreateAliasOperation(create_alias=models.CreateAlias(
            collection_name=self.collection, alias_name=alias)))
        self.client.update_collection_aliases(change_aliases_operations=operations)

    def __len__(self) -> int:
        return int(self.client.count(self.collection, exact=True).count)


def alias_target(client: QdrantClient, alias: str) -> str | None:
    """The collection an alias points at, if any."""
    for a in client.get_aliases().aliases:
        if a.alias_name == alias:
            return a.collection_name
    return None
