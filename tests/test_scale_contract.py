"""One contract for every VectorIndex backend: FAISS flat, IVF-SQ8, IVF-PQ with its exact re-rank, Qdrant local."""

from pathlib import Path

import numpy as np
import pytest

from indexing.matcher.vectors import stored_vectors
from indexing.vectorindex.base import VectorIndex
from indexing.vectorindex.factory import open_index
from indexing.vectorindex.ivf import build_in_memory

DIM, N, K = 32, 3000, 20


def corpus(seed: int = 0) -> np.ndarray:
    """Clustered unit vectors, so IVF lists mean something (as the scale benches draw them); seed: fresh points
    around the same centres."""
    centres = np.random.default_rng(0).standard_normal((40, DIM))
    rng = np.random.default_rng(seed + 1)
    v = centres[rng.integers(0, 40, N)] + 0.5 * rng.standard_normal((N, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def exact(queries: np.ndarray, vectors: np.ndarray, k: int, lo: int = 0, hi: int = N) -> tuple[np.ndarray, np.ndarray]:
    sims = queries @ vectors[lo:hi].T
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(sims, order, 1), order + lo


def make(backend: str, vectors: np.ndarray, home: Path) -> VectorIndex:
    ids = np.arange(N, dtype=np.int64)
    if backend == "flat":
        return build_in_memory(vectors, ids)
    if backend == "ivf-sq8":
        return build_in_memory(vectors, ids, factory="IVF32_HNSW32,SQ8", holdout=200)
    if backend == "ivf-pq-rerank":
        return build_in_memory(vectors, ids, factory="IVF32_HNSW32,PQ8np", holdout=200, rerank_dir=home)
    from indexing.vectorindex.qdrant import QdrantIndex, collection_name, connect

    path = home.parent.parent / "qdrant"
    index = QdrantIndex.create(connect(path=path), DIM, collection_name("contract", home.name), path=path)
    index.add(vectors, ids)
    return index


BACKENDS = ["flat", "ivf-sq8", "ivf-pq-rerank", "qdrant-local"]
EXACT = {"flat", "qdrant-local"}
RESCORED = {"ivf-pq-rerank"}  # approximate candidates, exact (float16) scores for what it returns


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path):
    if request.param == "qdrant-local":
        pytest.importorskip("qdrant_client", reason="qdrant-client is the optional `scale` extra")
    home = tmp_path / "indexes" / "v0001"
    home.mkdir(parents=True)
    vectors = corpus()
    index = make(request.param, vectors, home)
    yield request.param, index, vectors, home
    index.close()
    if request.param == "qdrant-local":
        from indexing.vectorindex.qdrant import release

        release(tmp_path / "qdrant")


def overlap(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found.tolist(), truth.tolist())]))


def test_search_with_and_without_a_window(backend):
    name, index, vectors, _ = backend
    assert isinstance(index, VectorIndex) and len(index) == N
    queries = corpus(seed=1)[:40]
    for lo, hi in [(0, N), (700, 1900), (2990, N)]:
        sims, ids = index.search(queries, K, allowed=None if (lo, hi) == (0, N) else (lo, hi))
        want_sims, want_ids = exact(queries, vectors, K, lo, hi)
        width = min(K, hi - lo)
        assert sims.shape[0] == ids.shape[0] == len(queries) and ids.shape[1] >= width
        valid = ids[:, :width]
        found = valid >= 0  # an approximate index may fill fewer slots of a narrow window
        assert ((valid[found] >= lo) & (valid[found] < hi)).all(), "a window must never return an id outside it"
        assert np.isneginf(sims[:, :width][~found]).all() and (ids[:, width:] == -1).all()
        assert (np.diff(np.where(found, sims[:, :width], -9), axis=1) <= 1e-6).all(), "best first"
        if name in EXACT:
            assert found.all()
            np.testing.assert_allclose(sims[:, :width], want_sims, atol=1e-5)
            assert overlap(valid, want_ids) > 0.99  # exact up to ties at the cut
        else:
            if hi - lo >= 1000:
                assert overlap(valid, want_ids) >= 0.8
            returned = np.take_along_axis(queries @ vectors.T, np.where(found, valid, 0), 1)
            # SQ8 codes score near the cosine; the float16 re-rank within about 1e-4 of it
            atol = 2e-3 if name in RESCORED else 0.05
            np.testing.assert_allclose(sims[:, :width][found], returned[found], atol=atol)
    sims, ids = index.search(queries[:3], K, allowed=(500, 500))
    assert (ids == -1).all() and ids.shape == (3, K) and np.isneginf(sims).all()


def test_stored_vectors_in_the_order_asked_and_a_missing_id_is_a_key_error(backend):
    name, index, vectors, _ = backend
    keys = np.array([17, 3, 2999, 17, 0])
    got = stored_vectors(index, keys)
    assert got is not None and got.shape == (5, DIM) and got.dtype == np.float32
    cos = np.sum(got * vectors[keys], axis=1) / np.linalg.norm(got, axis=1)
    assert cos.min() > (0.9999 if name in EXACT | RESCORED else 0.99)
    with pytest.raises(KeyError, match="5000"):
        index.vectors(np.array([1, 5000]))


def test_save_load_answers_the_same_and_publish(backend):
    name, index, vectors, folder = backend
    queries = corpus(seed=2)[:10]
    before = index.search(queries, K, allowed=(100, 2100))
    files = index.save(folder)
    assert files and all(f.parent == folder and f.exists() for f in files)
    spec = {"kind": index.kind, "factory": index.factory, **index.params}
    reopened = open_index(folder, spec)
    try:
        after = reopened.search(queries, K, allowed=(100, 2100))
        np.testing.assert_array_equal(after[1], before[1])
        np.testing.assert_allclose(after[0], before[0], atol=1e-6)
        np.testing.assert_allclose(reopened.vectors(np.array([5, 6])), index.vectors(np.array([5, 6])), atol=1e-6)
        assert reopened.describe()["kind"] == index.kind
        previous = reopened.publish("hindsight-current")
        if name == "qdrant-local":
            assert previous is None and reopened.describe()["alias_target"] == reopened.params["collection"]
        else:
            assert previous is None  # FAISS: the CURRENT pointer publishes the folder
    finally:
        if reopened is not index:
            reopened.close()
