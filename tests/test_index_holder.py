"""The server's index holder: follows the pointer, refuses damaged versions, retries after a repair."""

import gc
import shutil
import threading
import weakref

from indexing.build import build_index
from indexing.embedders.minilm import MiniLMEmbedder
from indexing.ingest import ingest_bytes
from indexing.matcher.corpus import corpus_of
from indexing.versions import PAPERS, set_current
from service.state import IndexHolder
from tests.helpers import ROOT


def test_refused_version_is_retried_when_republished_after_repair(settings, minilm, tmp_path):
    lines = (ROOT / "data/papers.jsonl").read_text().splitlines()
    ingest_bytes("\n".join(lines[:8]).encode(), "a.jsonl", db_path=settings.db_path)
    v1 = build_index(settings, embedder=minilm).version
    holder = IndexHolder(settings)
    assert holder.current().version == v1

    ingest_bytes("\n".join(lines[8:12]).encode(), "b.jsonl", db_path=settings.db_path)
    v2 = build_index(settings, embedder=minilm).version
    papers = settings.indexes_dir / v2 / PAPERS
    shutil.copy(papers, tmp_path / "good")
    papers.write_bytes(papers.read_bytes()[:-10])  # damaged after publishing
    holder._loaded = None
    set_current(settings.indexes_dir, v1)
    assert holder.current().version == v1
    set_current(settings.indexes_dir, v2)
    assert holder.current().version == v1  # refused, the good one keeps serving
    assert "checksum mismatch" in holder.warning()

    shutil.copy(tmp_path / "good", papers)  # repaired; the refusal stands until the pointer is rewritten
    assert holder.current().version == v1
    set_current(settings.indexes_dir, v2)  # what `hindsight index use v2` does
    assert holder.current().version == v2 and holder.warning() is None


def test_a_loaded_version_leaves_the_collectors_walks_and_a_replaced_one_is_freed(settings, minilm):
    lines = (ROOT / "data/papers.jsonl").read_text().splitlines()
    ingest_bytes("\n".join(lines[:8]).encode(), "a.jsonl", db_path=settings.db_path)
    build_index(settings, embedder=minilm)
    holder = IndexHolder(settings)
    loaded = holder.current()
    in_a_cycle = corpus_of(loaded).loaded is loaded  # only the cycle collector can free it
    first = weakref.ref(loaded)
    del loaded
    assert in_a_cycle
    assert gc.get_freeze_count() > 0  # frozen: full collections no longer walk the version

    ingest_bytes("\n".join(lines[8:12]).encode(), "b.jsonl", db_path=settings.db_path)
    v2 = build_index(settings, embedder=minilm).version
    assert holder.current().version == v2
    gone = first() is None  # settled when the new version came in: the old one's cycles were collected
    assert gone


def test_a_request_during_the_first_ones_warm_up_waits_for_it(settings, minilm, monkeypatch):
    """The embedder is handed out once warmed: a second request arriving while the first one warms it waits for the
    warm-up (before, it was handed the embedder at once and ran beside the warm-up)."""
    lines = (ROOT / "data/papers.jsonl").read_text().splitlines()
    ingest_bytes("\n".join(lines[:8]).encode(), "a.jsonl", db_path=settings.db_path)
    build_index(settings, embedder=minilm)
    holder = IndexHolder(settings)
    loaded = holder.current()
    second: list = []
    during: list[bool] = []
    warm = MiniLMEmbedder.warm

    def watched(self: MiniLMEmbedder) -> None:
        other = threading.Thread(target=lambda: second.append(holder.embedder_for(loaded)))
        other.start()
        other.join(2)
        during.append(bool(second))  # the second request was answered while this one warms
        warm(self)
        watcher.append(other)

    watcher: list[threading.Thread] = []
    monkeypatch.setattr(MiniLMEmbedder, "warm", watched)
    first = holder.embedder_for(loaded)
    watcher[0].join(60)
    assert during == [False] and second == [first]
