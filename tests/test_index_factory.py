"""The index factory: the backend checks, FAISS from vectors or shards (the size picks the factory, PQ codes get a
re-rank store), and a Qdrant collection that leaves nothing behind when filling it fails."""

import numpy as np
import pytest

from indexing.vectorindex.factory import (
    QdrantTarget, check_backend, create_faiss, create_index, create_sharded, drop_index, drop_version, open_index,
)
from indexing.vectorindex.rerank import FILENAME as RERANK_FILE
from indexing.vectorindex.shards import write_shard

DIM = 16


def unit(n: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_unknown_backends_and_a_factory_for_qdrant_are_refused():
    check_backend("faiss", "IDMap2,Flat")
    check_backend("qdrant", None)
    with pytest.raises(ValueError, match="unknown vector backend 'milvus'"):
        check_backend("milvus", None)
    with pytest.raises(ValueError, match="takes no factory"):
        create_index(unit(10), backend="qdrant", factory="IDMap2,Flat")


def test_faiss_from_vectors_is_flat_while_small_and_a_pq_factory_keeps_a_rerank_store(tmp_path):
    vectors = unit(600)
    flat = create_index(vectors, folder=tmp_path)
    assert flat.kind == "faiss:IDMap2,Flat" and len(flat) == 600 and not (tmp_path / RERANK_FILE).exists()
    pq = create_faiss(vectors, np.arange(600), factory="IVF8,PQ4x4np", folder=tmp_path)
    assert pq.rerank is not None and (tmp_path / RERANK_FILE).exists() and pq.params["nlist"] == 8
    assert drop_index(flat) is False  # a FAISS index lives in its folder alone


def test_faiss_from_shards_reads_the_size_from_the_footers(tmp_path):
    vectors = unit(900, seed=1)
    paths = [write_shard(tmp_path / f"{s}.parquet", np.arange(s * 300, (s + 1) * 300), vectors[s * 300:(s + 1) * 300])
             for s in range(3)]
    index = create_sharded(paths, dim=DIM, folder=tmp_path)
    assert index.factory == "IDMap2,Flat" and len(index) == 900 and not (tmp_path / RERANK_FILE).exists()
    sims, ids = index.search(vectors[:1], 1)
    assert ids[0, 0] == 0 and sims[0, 0] == pytest.approx(1.0, abs=1e-5)


def test_a_qdrant_collection_whose_filling_fails_is_dropped(tmp_path):
    pytest.importorskip("qdrant_client", reason="qdrant-client is the optional `scale` extra")
    from indexing.vectorindex.qdrant import connect, release

    path = tmp_path / "qdrant"
    target = QdrantTarget(url=None, path=path, api_key=None, prefix="t", alias="t-current")
    try:
        with pytest.raises(ValueError, match="payloads"):
            create_index(unit(5), backend="qdrant", qdrant=target, version="v0001", payloads=[{}])
        assert connect(path=path).get_collections().collections == []
        index = create_index(unit(5), backend="qdrant", qdrant=target, version="v0002")
        folder = tmp_path / "indexes" / "v0002"  # local mode: HINDSIGHT_HOME/qdrant beside HINDSIGHT_HOME/indexes
        folder.mkdir(parents=True)
        index.save(folder)
        assert len(open_index(folder, {"kind": index.kind, "factory": index.factory, **index.params})) == 5
        drop_version(folder, {"kind": "qdrant", **index.params})
        assert connect(path=path).get_collections().collections == []
    finally:
        release(path)
