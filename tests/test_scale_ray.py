"""Ray Data embedding on a local 2-CPU Ray: the same vectors as the single-process path, retried workers, no
duplicates."""

import os
import random

import numpy as np
import orjson
import pytest
from sqlalchemy import func, select

ray = pytest.importorskip("ray", reason="Ray is the optional `scale` extra")

from indexing.build import build_index  # noqa: E402
from indexing.cachekey import text_hash  # noqa: E402
from indexing.db import migrate, session_scope  # noqa: E402
from indexing.embed_cache import embed_with_cache  # noqa: E402
from indexing.distributed import EncoderActor, embed_on_ray, export_dataset, merge_shards  # noqa: E402
from indexing.embedders import join  # noqa: E402
from indexing.ingest import ingest_bytes  # noqa: E402
from indexing.models import Embedding  # noqa: E402
from indexing.settings import Settings  # noqa: E402

WORDS = ("sparse attention retrieval graph kernel diffusion protein robot grasp policy token merging calibration "
         "conformal uncertainty contrastive language vision benchmark agent planning reward").split()


@pytest.fixture(scope="module")
def local_ray():
    try:
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    except Exception as exc:  # no shared memory, no sockets, ...: skip with the reason rather than fail
        pytest.skip(f"a local Ray instance cannot start here: {type(exc).__name__}: {exc}")
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def papers(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [{"id": f"p-{seed}-{i}", "title": " ".join(rng.choices(WORDS, k=rng.randint(3, 9))).title(),
             "abstract": " ".join(rng.choices(WORDS, k=rng.randint(5, 60))) + ".",
             "publication_date": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}"} for i in range(n)]


def cache_rows(settings: Settings) -> dict[str, int]:
    with session_scope(settings.db_path) as session:
        query = select(Embedding.content_hash, func.count()).group_by(Embedding.content_hash)
        return dict(session.execute(query).all())


@pytest.mark.server  # a local Ray cluster is a set of processes
def test_ray_build_embeds_the_same_vectors_as_one_process(settings, minilm, local_ray, tmp_path):
    rows = papers(64)
    ingest_bytes(b"\n".join(orjson.dumps(r) for r in rows), "papers.jsonl", db_path=settings.db_path)
    result = build_index(settings, embedder=minilm, engine="ray")
    counts = result.manifest["counts"]
    assert counts["indexed"] == 64
    assert counts["embedded_new"] == 0 and counts["embedded_from_cache"] == 64  # Ray filled the cache first

    texts = [join(minilm, r["title"], r["abstract"]) for r in rows]
    from_ray, embedded = embed_with_cache(minilm, texts, db_path=settings.db_path)
    assert embedded == 0
    local_db = tmp_path / "local" / "hindsight.db"
    migrate(local_db)
    one_process, _ = embed_with_cache(minilm, texts, db_path=local_db)
    # the same bits, though Ray's actors batched other papers together: a vector is its text's alone (solo.py)
    assert np.array_equal(from_ray, one_process)
    assert not list((settings.home / "embed-shards").rglob("*.parquet"))  # merged shards are removed


@pytest.mark.server  # a local Ray cluster is a set of processes
def test_a_killed_worker_is_retried_without_losing_or_duplicating(settings, minilm, local_ray, tmp_path):
    marker = tmp_path / "crashed-once"

    class CrashOnce(EncoderActor):
        def __call__(self, batch):
            if not marker.exists():
                marker.write_text(str(os.getpid()))
                os._exit(1)  # the worker process dies mid-run, as on a lost node
            return super().__call__(batch)

    texts = [join(minilm, p["title"], p["abstract"]) for p in papers(80, seed=1)]
    texts += texts[:5]  # duplicates embed once
    added = embed_on_ray(minilm, texts, settings=settings, actors=2, encoder=CrashOnce)
    assert marker.exists(), "the crashing encoder never ran"
    unique = {text_hash(minilm, t) for t in texts}
    rows = cache_rows(settings)
    assert added == len(unique) == 80
    assert set(rows) == unique and set(rows.values()) == {1}

    local_db = tmp_path / "local" / "hindsight.db"
    migrate(local_db)
    expected, _ = embed_with_cache(minilm, texts, db_path=local_db)
    got, embedded = embed_with_cache(minilm, texts, db_path=settings.db_path)
    assert embedded == 0
    assert np.array_equal(got, expected)


def test_merging_the_same_shards_again_adds_nothing(settings, minilm, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from indexing.vectorindex.shards import vector_array

    texts = ["alpha beta", "gamma delta", "epsilon"]
    vectors = minilm.encode(texts)
    shard = tmp_path / "part-0.parquet"
    pq.write_table(pa.table({"content_hash": [text_hash(minilm, t) for t in texts],
                             "revision": [minilm.revision] * 3, "vector": vector_array(vectors)}), shard)
    assert merge_shards([shard, shard], db_path=settings.db_path, embedder=minilm) == 3
    assert merge_shards([shard], db_path=settings.db_path, embedder=minilm) == 0
    assert set(cache_rows(settings).values()) == {1}

    pq.write_table(pa.table({"content_hash": ["x"], "revision": ["other-weights"],
                             "vector": vector_array(vectors[:1])}), shard)
    with pytest.raises(RuntimeError, match="revision"):
        merge_shards([shard], db_path=settings.db_path, embedder=minilm)


@pytest.mark.server  # a local Ray cluster is a set of processes
def test_an_export_reads_as_the_uncached_papers(settings, minilm, local_ray, tmp_path):
    rows = papers(10, seed=2)
    export = tmp_path / "export.jsonl"
    export.write_bytes(b"\n".join(orjson.dumps({"title": r["title"], "abstract": r["abstract"]}) for r in rows))
    cached = [join(minilm, r["title"], r["abstract"]) for r in rows[:4]]
    embed_with_cache(minilm, cached, db_path=settings.db_path)
    dataset = export_dataset(str(export), minilm, db_path=settings.db_path)
    hashes = sorted(r["content_hash"] for r in dataset.take_all())
    assert hashes == sorted(text_hash(minilm, join(minilm, r["title"], r["abstract"])) for r in rows[4:])
