"""The SPECTER2 path (adapters + CLS pooling) on a tiny random BERT and adapter built here."""

from pathlib import Path

import numpy as np
import pytest
import torch

from indexing.embedders import join, openvino_backend
from indexing.embedders.specter2 import SPECTER2_THETA, Specter2Embedder
from tests.helpers import changed

WORDS = ["graph", "neural", "network", "diffusion", "policy", "robot", "retrieval", "language", "model", "the", "of"]


@pytest.fixture(scope="module")
def tiny_specter2(tmp_path_factory) -> tuple[Path, Path]:
    from adapters import AutoAdapterModel
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("specter2")
    base, adapter = root / "base", root / "adapter"
    base.mkdir()
    vocab = base / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(base)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=5 + len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(base)
    model = AutoAdapterModel.from_pretrained(str(base))
    model.add_adapter("specter2", config="seq_bn")
    with torch.no_grad():  # a freshly initialised adapter is near-identity; make it matter
        for name, p in model.named_parameters():
            if "adapters" in name:
                p.add_(torch.randn_like(p) * 0.5)
    model.save_adapter(str(adapter), "specter2")
    return base, adapter


def reference_cls(base: Path, adapter: Path, texts: list[str], with_adapter: bool) -> np.ndarray:
    from adapters import AutoAdapterModel
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base))
    model = AutoAdapterModel.from_pretrained(str(base))
    if with_adapter:
        model.load_adapter(str(adapter), load_as="specter2", set_active=True)
    model.eval()
    enc = tok(texts, padding=True, truncation=True, max_length=512, return_tensors="pt", return_token_type_ids=False)
    with torch.no_grad():
        cls = model(**enc).last_hidden_state[:, 0, :].numpy()
    return cls / np.linalg.norm(cls, axis=1, keepdims=True)


def test_specter2_loads_adapter_and_uses_normalised_cls(tiny_specter2):
    base, adapter = tiny_specter2
    emb = Specter2Embedder(base=str(base), adapter=str(adapter))
    assert emb.theta == SPECTER2_THETA == 0.96 and emb.dim == 32 and emb.max_tokens == 512
    texts = [join(emb, "graph neural network", "the diffusion of policy"), join(emb, "robot", "retrieval model")]
    assert texts[0] == "graph neural network[SEP]the diffusion of policy"  # title + sep + abstract
    got = emb.encode(texts, batch_size=1)
    assert got.dtype == np.float32 and np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(got, reference_cls(base, adapter, texts, with_adapter=True), atol=1e-5)
    without = reference_cls(base, adapter, texts, with_adapter=False)
    assert np.abs(got - without).max() > 1e-2  # the adapter is really active


def test_specter2_truncates_at_512_tokens(tiny_specter2):
    base, adapter = tiny_specter2
    emb = Specter2Embedder(base=str(base), adapter=str(adapter))
    long_text = join(emb, "graph", " ".join(["network"] * 2000))
    assert emb.encode([long_text]).shape == (1, 32)


def test_specter2_revision_changes_with_weights(tiny_specter2, tmp_path):
    import shutil

    base, adapter = tiny_specter2
    first = Specter2Embedder(base=str(base), adapter=str(adapter)).revision
    other = tmp_path / "adapter2"
    shutil.copytree(adapter, other)
    (other / "extra.bin").write_bytes(b"x")
    assert Specter2Embedder(base=str(base), adapter=str(other)).revision != first



def test_specter2_backends_convert_base_and_adapter(tiny_specter2):
    """bf16 and int8 cover every projection, the adapter's included; each backend is its own revision."""
    base, adapter = tiny_specter2
    fp32 = Specter2Embedder(base=str(base), adapter=str(adapter))
    texts = [join(fp32, "graph neural network", "the diffusion of policy"), join(fp32, "robot", "retrieval model")]
    ref = fp32.encode(texts)
    revisions = {fp32.revision}
    for backend in ("torch-bf16", "torch-int8"):
        emb = Specter2Embedder(base=str(base), adapter=str(adapter), backend=backend)
        revisions.add(emb.revision)
        assert emb.backend == backend and emb.revision.startswith(fp32.revision + "-")
        linears = [m for m in emb.model.modules() if isinstance(m, torch.nn.Linear)]
        if backend == "torch-bf16":
            assert linears and all(m.weight.dtype == torch.bfloat16 for m in linears)
        else:  # no float nn.Linear left: the adapters' LoRA-capable wrappers were swapped and quantised too
            assert not linears
            assert any("adapters" in name and "Linear" in type(m).__name__ for name, m in emb.model.named_modules())
        got = emb.encode(texts)
        assert got.dtype == np.float32 and float(np.min(np.sum(ref * got, axis=1))) > 0.98
    assert len(revisions) == 3


@pytest.mark.skipif(not openvino_backend.available(), reason="openvino-int8 needs a CPU with int8 dot products")
def test_specter2_openvino_int8_keeps_the_adapter_and_the_cls_vector(tiny_specter2, tmp_path):
    """The IR is base + adapter (the adapter made to matter above), CLS-pooled; its own revision."""
    base, adapter = tiny_specter2
    fp32 = Specter2Embedder(base=str(base), adapter=str(adapter))
    emb = Specter2Embedder(base=str(base), adapter=str(adapter), backend="openvino-int8", export_dir=tmp_path)
    assert emb.revision == fp32.revision + openvino_backend.variant() and emb.dim == 32
    texts = [join(fp32, w, " ".join(WORDS[i:] + WORDS[:i])) for i, w in enumerate(WORDS)]
    got = emb.encode(texts, batch_size=3)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    with_adapter, without = (reference_cls(base, adapter, texts, a) for a in (True, False))
    assert float(np.mean(np.sum(with_adapter * got, axis=1))) > 0.99
    assert float(np.mean(np.sum(without * got, axis=1))) < float(np.mean(np.sum(with_adapter * got, axis=1))) - 0.01
    (xml,) = tmp_path.glob("specter2-*-openvino-int8-*/model.xml")  # converted once, into the models folder
    assert "adapter_down" in xml.read_text() and "FakeQuantize" in xml.read_text()


def test_specter2_backends_are_checked_at_every_length_and_refused_where_one_fails(tiny_specter2, settings,
                                                                                    tmp_path, monkeypatch):
    """The backend check runs for SPECTER2 too: probes at its 32 input lengths (16 to 512 tokens) against fp32 torch
    of the same weights, SPECTER2's bound 0.01; a fault injected at one length (here 64) makes an explicit choice
    refuse and `auto` fall back, naming the length."""
    from indexing.embedders import check, load_embedder, runtime, solo
    from indexing.embedders.specter2 import _load

    base, adapter = tiny_specter2
    named = changed(settings, index={"specter2_base": str(base), "specter2_adapter": str(adapter),
                                     "specter2_backend": "torch-bf16", "backend_check_dir": tmp_path / "checks"})
    bf16 = load_embedder("specter2", named)
    verdict = bf16.backend_check
    assert verdict["lengths"] == solo.lengths(512) and verdict["bound"] == 0.01
    assert verdict["verdict"] == ("pass" if verdict["worst"]["drift"] <= 0.01 else "fail")
    model = _load(str(base), str(adapter), "cpu", "torch-bf16")
    forward = model.forward

    def corrupted(*args, **kwargs):
        out = forward(*args, **kwargs)
        if kwargs["input_ids"].shape[1] == 64:
            out.last_hidden_state = torch.roll(out.last_hidden_state, 1, 2)
        return out

    monkeypatch.setattr(model, "forward", corrupted)
    elsewhere = changed(named, index={"backend_check_dir": tmp_path / "elsewhere"})
    with pytest.raises(check.BackendCheckFailed, match="specter2 backend torch-bf16 fails this machine's backend "
                                                       "check at input length 64"):
        load_embedder("specter2", elsewhere)
    monkeypatch.setattr(runtime, "auto_order", lambda device: ["torch-bf16", "torch"])
    fallback = load_embedder("specter2", changed(elsewhere, index={"specter2_backend": "auto"}))
    assert fallback.backend == "torch" and fallback.backend_check["skipped"][0]["length"] == 64
