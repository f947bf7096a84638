"""IVF-PQ built from Parquet shards: reaches the recall it records, in RAM and merged on disk, and loads back."""

import shutil

import faiss
import numpy as np
import pytest

from indexing.vectorindex.factory import open_index
from indexing.vectorindex.faiss_index import FaissIndex, factory_for
from indexing.vectorindex.ivf import RECALL_K, build_from_shards, build_in_memory, recall_at_k
from indexing.vectorindex.shards import read_shard, write_shard

DIM, N, SHARDS = 32, 12_000, 6
FACTORY = "IVF64_HNSW32,PQ16x4np"  # 4-bit PQ: trains in a fraction of a second, still a lossy code
TOLERANCE = 0.05  # recall on 300 fresh queries vs 300 held-aside ones: a few points of sampling noise


def clustered(n: int, rng: np.random.Generator, centres: np.ndarray, projection: np.ndarray) -> np.ndarray:
    """Points around cluster centres in a low-rank space plus noise: neighbourhoods like text embeddings have."""
    latent = centres[rng.integers(0, len(centres), n)] + 0.5 * rng.standard_normal((n, centres.shape[1]))
    vectors = (latent @ projection + 0.1 * rng.standard_normal((n, DIM))).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = np.random.default_rng(7)
    centres, projection = rng.standard_normal((60, 12)), rng.standard_normal((12, DIM)) / np.sqrt(12)
    folder = tmp_path_factory.mktemp("shards")
    per = N // SHARDS
    paths = [write_shard(folder / f"{s:03d}.parquet", np.arange(s * per, (s + 1) * per) + 1000,
                         clustered(per, rng, centres, projection)) for s in range(SHARDS)]
    queries = clustered(300, np.random.default_rng(8), centres, projection)
    return paths, queries


def exact_ids(paths, queries: np.ndarray) -> np.ndarray:
    flat = faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))
    for p in paths:
        flat.add_with_ids(*reversed(read_shard(p, dim=DIM)))
    return flat.search(queries, RECALL_K)[1]


@pytest.fixture(scope="module")
def in_ram(corpus) -> FaissIndex:
    return build_from_shards(corpus[0], dim=DIM, factory=FACTORY, workers=2, holdout=300)


def test_ivf_pq_from_shards_reaches_its_recorded_recall(corpus, in_ram, tmp_path):
    paths, queries = corpus
    index = in_ram
    params = index.params
    assert len(index) == N and params["ntotal"] == N
    assert params["train_size"] < N and params["holdout"] == 300
    recorded = params[f"recall_at_{RECALL_K}"]
    assert params["recall_by_nprobe"][str(params["nprobe"])] == recorded
    assert 0.5 < recorded < 1.0  # PQ is lossy, yet far better than chance (20 of 12,000)

    folder = tmp_path / "v1"
    folder.mkdir()
    index.save(folder)
    loaded = open_index(folder, {"kind": index.kind, "factory": index.factory, **params})
    assert faiss.extract_index_ivf(loaded.index).nprobe == params["nprobe"]  # search parameters come back
    _, found = loaded.search(queries, RECALL_K)
    fresh = recall_at_k(found, exact_ids(paths, queries))
    print(f"recorded recall@20 {recorded:.3f}, on fresh queries {fresh:.3f}, nprobe {params['nprobe']}")
    assert fresh >= recorded - TOLERANCE


def test_on_disk_merge_gives_the_same_answers_and_moves_with_its_folder(corpus, in_ram, tmp_path):
    paths, queries = corpus
    work = tmp_path / "work"
    work.mkdir()
    on_disk = build_from_shards(paths, dim=DIM, factory=FACTORY, holdout=300, ondisk_dir=work)
    assert on_disk.params["ondisk"] and on_disk.params["nprobe"] == in_ram.params["nprobe"]
    staging = tmp_path / ".staging"
    staging.mkdir()
    files = on_disk.save(staging)
    assert {f.name for f in files} == {"index.faiss", "index.ivfdata"}
    published = tmp_path / "v2"
    staging.rename(published)  # the build's atomic publish renames the folder
    shutil.rmtree(work)
    loaded = FaissIndex.load(published, {"factory": on_disk.factory, **on_disk.params})
    sims_disk, ids_disk = loaded.search(queries, RECALL_K)
    sims_ram, ids_ram = in_ram.search(queries, RECALL_K)
    np.testing.assert_array_equal(ids_disk, ids_ram)
    np.testing.assert_allclose(sims_disk, sims_ram, atol=1e-6)


def test_saving_in_ram_lists_as_ondisk_is_refused_naming_the_file(in_ram, tmp_path):
    claims_ondisk = FaissIndex(in_ram.index, in_ram.factory, {**in_ram.params, "ondisk": True})
    with pytest.raises(ValueError, match=r"index\.faiss: the manifest says ondisk, but the index holds "
                                         r"ArrayInvertedLists"):
        claims_ondisk.save(tmp_path)


def test_in_memory_ivf_records_recall_and_flat_stays_exact(corpus):
    paths, queries = corpus
    ids, vectors = zip(*(read_shard(p, dim=DIM) for p in paths))
    ids, vectors = np.concatenate(ids), np.concatenate(vectors)
    ivf = build_in_memory(vectors, ids, factory="IVF64_HNSW32,SQ8", holdout=300)
    assert ivf.params["recall_at_20"] >= 0.9 and len(ivf) == N
    flat = build_in_memory(vectors, ids)
    assert flat.factory == "IDMap2,Flat" and flat.params == {}
    np.testing.assert_array_equal(flat.search(queries, RECALL_K)[1], exact_ids(paths, queries))


def test_factory_follows_corpus_size():
    assert factory_for(27_589, 768) == "IDMap2,Flat"
    assert factory_for(1_000_000, 768) == "IVF1024_HNSW32,SQ8"
    assert factory_for(240_000_000, 768) == "IVF16384_HNSW32,PQ96np"
    assert factory_for(5_000_000, 384) == "IVF2048_HNSW32,PQ48np"
