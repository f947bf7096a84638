"""Qdrant local mode behind the vector-index protocol: FAISS's top-20 and scores, a collection per version."""

import numpy as np
import pytest

pytest.importorskip("qdrant_client", reason="qdrant-client is the optional `scale` extra")
from qdrant_client import QdrantClient  # noqa: E402

from indexing.vectorindex.factory import open_index  # noqa: E402
from indexing.vectorindex.faiss_index import FaissIndex  # noqa: E402
from indexing.vectorindex.qdrant import (  # noqa: E402
    LocalModeLocked, QdrantIndex, alias_target, collection_name, connect, release,
)

DIM, N, K = 48, 2000, 20


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture
def client(tmp_path):
    yield connect(path=tmp_path / "qdrant")
    release(tmp_path / "qdrant")


def test_local_mode_returns_the_faiss_top20():
    client = QdrantClient(location=":memory:")  # local mode, without the folder's per-write persistence
    rng = np.random.default_rng(3)
    vectors, queries = unit(rng, N), unit(rng, 50)
    ids = rng.permutation(np.arange(10, 10 + N)).astype(np.int64)  # paper keys, not row numbers
    faiss_index = FaissIndex.create(DIM, n_hint=N)
    faiss_index.add(vectors, ids)
    qdrant = QdrantIndex.create(client, DIM, collection_name("hindsight", "v0001"))
    qdrant.add(vectors, ids)
    assert len(qdrant) == N

    f_sims, f_ids = faiss_index.search(queries, K + 1)  # the 21st tells whether the 20th ties at the cut
    q_sims, q_ids = qdrant.search(queries, K)
    np.testing.assert_allclose(q_sims, f_sims[:, :K], atol=1e-5)  # the same cosines, rank by rank
    for row in range(len(queries)):
        close = np.abs(np.diff(f_sims[row])) < 1e-6  # neighbours in rank with equal scores may swap
        tied = np.zeros(K + 1, dtype=bool)
        tied[:-1] |= close
        tied[1:] |= close
        np.testing.assert_array_equal(q_ids[row][~tied[:K]], f_ids[row, :K][~tied[:K]])
    assert (q_ids == f_ids[:, :K]).mean() > 0.99  # ties are rare on random vectors: almost every id matches


def test_versions_get_collections_and_publish_flips_the_alias(client, tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "qdrant"
    v1 = QdrantIndex.create(client, DIM, collection_name("hindsight", "v0001"), path=path)
    v1.add(unit(rng, 10), np.arange(1, 11))
    assert v1.publish("hindsight-current") is None
    assert alias_target(client, "hindsight-current") == "hindsight-v0001"
    v2 = QdrantIndex.create(client, DIM, collection_name("hindsight", "v0002"), path=path)
    v2.add(unit(rng, 12), np.arange(1, 13))
    assert v2.publish("hindsight-current") == "hindsight-v0001"  # what a failed build rolls back to
    assert alias_target(client, "hindsight-current") == "hindsight-v0002"
    assert len(v1) == 10  # the old version stays queryable for in-flight requests and rollback
    with pytest.raises(ValueError, match="exists already"):
        QdrantIndex.create(client, DIM, "hindsight-v0002", path=path)

    folder = tmp_path / "indexes" / "v0002"  # as HINDSIGHT_HOME/indexes/<version> beside HINDSIGHT_HOME/qdrant
    folder.mkdir(parents=True)
    files = v2.save(folder)
    assert [f.name for f in files] == ["qdrant.json"]
    release(path)  # a new process's view: the folder is reopened from the version's spec
    reopened = open_index(folder, {"kind": v2.kind, "factory": v2.factory, **v2.params})
    assert isinstance(reopened, QdrantIndex) and reopened.collection == "hindsight-v0002"
    assert len(reopened) == 12
    assert reopened.describe()["alias_target"] == "hindsight-v0002"


def test_a_second_process_on_a_local_folder_is_refused_clearly(client, tmp_path):
    import subprocess
    import sys

    code = ("from indexing.vectorindex.qdrant import connect, LocalModeLocked\n"
            f"try:\n    connect(path={str(tmp_path / 'qdrant')!r})\n"
            "except LocalModeLocked as exc:\n    print('REFUSED', exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    assert "REFUSED" in out.stdout, out.stderr
    assert "in use by another process" in out.stdout and "HINDSIGHT_QDRANT_URL" in out.stdout
    assert str(tmp_path) not in out.stdout  # the reason names the folder, not the machine's paths
    assert LocalModeLocked.__mro__[1].__name__ == "IndexUnavailable"  # the service answers it with a 503


def test_negative_ids_are_refused(client, tmp_path):
    index = QdrantIndex.create(client, DIM, "neg", path=tmp_path / "qdrant")
    with pytest.raises(ValueError, match="non-negative"):
        index.add(unit(np.random.default_rng(0), 1), np.array([-1]))
