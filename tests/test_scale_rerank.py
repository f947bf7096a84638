"""A PQ build gets the float16 re-rank store: recall@20 tuned and recorded in the manifest, exact stored vectors."""

import numpy as np
import pytest

from indexing.build import build_index
from indexing.ingest import ingest_bytes
from indexing.versions import load_current
from tests.helpers import ROOT

pytestmark = pytest.mark.server  # a PQ build with recall tuning: half a minute, so it runs in the second step


def test_a_pq_version_reranks_with_exact_vectors(settings, minilm):
    ingest_bytes((ROOT / "data/papers.jsonl").read_bytes(), "papers.jsonl", db_path=settings.db_path)
    result = build_index(settings, embedder=minilm, factory="IVF4,PQ8x4np", matcher="dense")
    spec = result.manifest["index"]
    assert spec["rerank"]["file"] == "rerank.f16.npy" and spec["rerank"]["bytes_per_vector"] == 2 * minilm.dim
    assert "rerank.f16.npy" in result.manifest["checksums"]
    assert spec["recall_at_20"] >= 0.95 and spec["recall_at_20"] >= spec["recall_at_20_codes_only"]
    loaded = load_current(settings.indexes_dir)
    assert loaded is not None
    stored = loaded.index.vectors(np.arange(len(loaded.rows)))
    assert stored is not None and stored.shape == (len(loaded.rows), minilm.dim)
    # each paper finds itself first, at cosine 1 within float16 rounding: the codes only choose the candidates
    hits = loaded.search_positions(stored[:20], 1)
    assert [h[0][0] for h in hits] == list(range(20))
    assert min(h[0][1] for h in hits) > 0.999
