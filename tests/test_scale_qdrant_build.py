"""Qdrant builds publish in the FAISS path's order: a failure at any step leaves the old alias and CURRENT."""

import numpy as np
import pytest

pytest.importorskip("qdrant_client", reason="qdrant-client is the optional `scale` extra")

import indexing.build as build_module  # noqa: E402
import indexing.versions as versions_module  # noqa: E402
from indexing.build import BuildFailed, build_index  # noqa: E402
from indexing.ingest import ingest_bytes  # noqa: E402
from indexing.vectorindex.qdrant import alias_target, connect, release  # noqa: E402
from indexing.versions import current_version, list_versions, load_current  # noqa: E402
from tests.helpers import ROOT  # noqa: E402


@pytest.fixture
def qdrant_settings(settings):
    lines = (ROOT / "data/papers.jsonl").read_text().splitlines()
    ingest_bytes("\n".join(lines[:40]).encode(), "a.jsonl", db_path=settings.db_path)
    settings.index.vector_backend = "qdrant"
    yield settings
    release(settings.qdrant_dir)


def collections(settings) -> set[str]:
    return {c.name for c in connect(path=settings.qdrant_dir).get_collections().collections}


def test_failed_builds_leave_the_old_alias_current_and_no_collection(qdrant_settings, minilm, monkeypatch):
    s = qdrant_settings
    first = build_index(s, embedder=minilm, matcher="dense")
    client = connect(path=s.qdrant_dir)
    assert alias_target(client, "hindsight-current") == f"hindsight-{first.version}"
    assert first.manifest["index"]["kind"] == "qdrant"
    assert first.manifest["lexical"]["documents"] == first.manifest["counts"]["indexed"] > 20

    def broken_verify(*args, **kwargs):
        raise versions_module.IndexDamaged("smoke query failed (injected)")

    monkeypatch.setattr(build_module, "_verify", broken_verify)
    with pytest.raises(BuildFailed, match="injected"):
        build_index(s, embedder=minilm, matcher="dense")
    monkeypatch.undo()

    def broken_pointer(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(versions_module, "set_current", broken_pointer)  # after the alias flip: it must go back
    with pytest.raises(BuildFailed, match="No space left"):
        build_index(s, embedder=minilm, matcher="dense")
    monkeypatch.undo()

    assert current_version(s.indexes_dir) == first.version and list_versions(s.indexes_dir) == [first.version]
    assert alias_target(client, "hindsight-current") == f"hindsight-{first.version}"
    assert collections(s) == {f"hindsight-{first.version}"}  # the failed builds' collections are dropped

    loaded = load_current(s.indexes_dir)
    assert loaded is not None
    window = loaded.resolve_window("2024-06-01")
    lo, hi = window.range
    probe = loaded.index.vectors(np.array([lo]))
    hits = loaded.search_positions(probe, 5, allowed=(lo, hi))[0]
    assert hits[0] == (lo, pytest.approx(1.0, abs=1e-5)) and all(lo <= p < hi for p, _ in hits)


def test_unknown_backend_and_a_factory_for_qdrant_are_refused(qdrant_settings, minilm):
    with pytest.raises(BuildFailed, match="unknown vector backend 'milvus'"):
        build_index(qdrant_settings, embedder=minilm, backend="milvus")
    with pytest.raises(BuildFailed, match="takes no factory"):
        build_index(qdrant_settings, embedder=minilm, factory="IDMap2,Flat")
    assert current_version(qdrant_settings.indexes_dir) is None
