"""A text's vector is its text's alone, on every backend `auto` picks: the same papers embedded beside different
batch-mates, in another order, or as a query give the same bits; the embedding cache keeps only such vectors."""

import json

import numpy as np
import pytest

from indexing.embed_cache import embed_with_cache
from indexing.db import migrate
from indexing.embedders.base import SOLO, cache_revision, join
from indexing.embedders.minilm import MiniLMEmbedder
from tests.helpers import ROOT

PAPERS = [json.loads(line) for line in (ROOT / "data" / "papers.jsonl").read_text().splitlines()[:16]]
OTHERS = ["Sparse experts.", "A survey of graph neural networks for molecules " * 12,
          "Bandits with knapsacks [SEP] regret bounds for resource-constrained exploration."]


# the backends `auto` picks on some CPU, each run on every CPU (bf16 emulated where the CPU has no bf16 instructions,
# the int8 IR without VNNI), so the outcome does not depend on the host: fp32 and bf16 torch (the tests' own, by CPU),
# int8 ONNX (CPUs without int8 dot products), the int8 OpenVINO IR (CPUs with them); the two int8 ones export or
# convert the model first (20-50 s), so they run in the server step
@pytest.mark.parametrize("backend", ["torch", "torch-bf16",
                                     pytest.param("onnx-int8", marks=pytest.mark.server),
                                     pytest.param("openvino-int8", marks=pytest.mark.server)])
def test_a_texts_vector_does_not_depend_on_its_batch_mates(backend, ir_dir):
    embedder = MiniLMEmbedder(backend=backend, export_dir=ir_dir)
    texts = [join(embedder, p["title"], p.get("abstract")) for p in PAPERS]
    whole = embedder.encode(texts, batch_size=16)
    # a few of the same papers, reversed, among texts of other lengths, in batches of another size
    picked = texts[3:12][::-1]
    mixed = embedder.encode([OTHERS[0], *picked[:4], OTHERS[1], *picked[4:], OTHERS[2]], batch_size=3)
    again = np.vstack([mixed[1:5], mixed[6:11]])
    assert np.array_equal(again, whole[3:12][::-1]), "a paper's vector moved with its batch-mates"
    # a paper's text scored as a query (the server's path, an idea's few facets at once) is the paper's own vector
    (query,) = embedder.encode_many([[texts[5]]])
    assert np.array_equal(query[0], whole[5])
    (facets,) = embedder.encode_many([[texts[6], OTHERS[2], texts[7]]])
    assert np.array_equal(facets[[0, 2]], whole[6:8])


def test_the_cache_keeps_solo_vectors_under_their_own_key(settings, minilm):
    """A cache row written before vectors were made alone (the revision without /solo) is never read back."""
    migrate(settings.db_path)
    texts = [join(minilm, p["title"], p.get("abstract")) for p in PAPERS[:6]]
    vectors, embedded = embed_with_cache(minilm, texts, db_path=settings.db_path)
    assert embedded == 6 and cache_revision(minilm) == f"{minilm.revision}/{SOLO}"
    fresh = minilm.encode(texts[2:5][::-1], batch_size=2)
    assert np.array_equal(vectors[2:5][::-1], fresh)
    again, embedded = embed_with_cache(minilm, texts + ["Sparse experts."], db_path=settings.db_path)
    assert embedded == 1 and np.array_equal(again[:6], vectors)


@pytest.mark.parametrize("backend", ["torch", "torch-bf16"])
def test_a_texts_vector_does_not_depend_on_the_threads_torch_was_given(backend):
    """A build in the CLI ran torch on every core, a query in the server on HINDSIGHT_SCORING_THREADS (1): on an
    AVX-512 CPU the same text got other bits (oneDNN splits a product over threads by its shape); every torch
    inference on CPU runs on one thread now, whatever the process set."""
    import torch

    embedder = MiniLMEmbedder(backend=backend)
    texts = [join(embedder, p["title"], p.get("abstract")) for p in PAPERS[:8]] + OTHERS
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = embedder.encode(texts)
        torch.set_num_threads(4)
        assert np.array_equal(embedder.encode(texts), one)
    finally:
        torch.set_num_threads(before)
