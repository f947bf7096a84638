"""The embedding backend's self-check (indexing/embedders/check.py): probes at every input length against fp32 torch,
`auto` falling back past a backend that fails, an explicit choice refusing unless overridden, a served index refused,
the verdict cached per machine and shown. The faults are injected into a real encoder, so these run on every CPU."""

import json
import logging
import shutil
from importlib.metadata import version

import pytest
import torch

from indexing.build import build_index
from indexing.embedders import check, cpu, load_embedder, minilm, openvino_backend, solo
from indexing.embedders.minilm import MiniLMEmbedder
from indexing.ingest import ingest_bytes
from service.state import IndexHolder, NoIndex
from tests.helpers import ROOT, TEST_ENV, changed, run_cli

BAD = 40  # the input length the injected fault corrupts


@pytest.fixture(scope="module")
def passed_dir(tmp_path_factory):
    """Verdicts of the real backends, probed once for the module (the shared per-user folder keeps the suite's)."""
    return tmp_path_factory.mktemp("checks")


@pytest.fixture(scope="module")
def failed_dir(tmp_path_factory):
    """Verdicts made with the fault injected: the first test to load the faulty backend probes, the others read."""
    return tmp_path_factory.mktemp("faulty-checks")


@pytest.fixture
def checks(passed_dir, settings, monkeypatch):
    monkeypatch.setattr(check, "PROBES_PER_LENGTH", 1)  # a third of the probe's time; part of the verdict's key
    return changed(settings, index={"backend_check_dir": passed_dir})


@pytest.fixture
def faulty(failed_dir, settings, monkeypatch):
    monkeypatch.setattr(check, "PROBES_PER_LENGTH", 1)
    return changed(settings, index={"backend_check_dir": failed_dir})


@pytest.fixture
def faulty_bf16(monkeypatch):
    """torch-bf16's real model, its output corrupted for inputs padded to BAD tokens (as OpenVINO's bf16 attention
    was at 32 on a Sapphire Rapids class CPU)."""
    embedder = MiniLMEmbedder(backend="torch-bf16")
    model = embedder.model
    forward = model.forward

    def corrupted(features, *args, **kwargs):
        out = forward(features, *args, **kwargs)
        if features["input_ids"].shape[1] == BAD:
            vectors = out["sentence_embedding"]
            out["sentence_embedding"] = vectors + 0.5 * vectors.norm(dim=1, keepdim=True) * torch.roll(vectors, 1, 1)
        return out

    monkeypatch.setattr(model, "forward", corrupted)
    monkeypatch.setattr(minilm, "auto_order", lambda device: ["torch-bf16", "torch"])
    return embedder


def test_probes_cover_every_input_length(minilm):
    probes = check.probe_texts(minilm.tokenizer, minilm.max_tokens)
    assert list(probes) == solo.lengths(minilm.max_tokens)
    for length, texts in probes.items():
        assert texts, length
        counts = minilm.tokenizer(texts, truncation=True, max_length=minilm.max_tokens)["input_ids"]
        assert {solo.padded_length(len(c), minilm.max_tokens) for c in counts} == {length}


def test_the_test_homes_backend_passes_the_check_here(settings):
    """tests/helpers.py names torch-bf16 on CPUs with native bf16, fp32 torch elsewhere: what it names passes this
    machine's check (the verdict from the per-user folder every test home shares, probed there once)."""
    embedder = load_embedder("minilm", settings)
    assert embedder.backend == TEST_ENV["HINDSIGHT_MINILM_BACKEND"]
    assert embedder.backend_check["verdict"] in ("pass", "reference"), embedder.backend_check


def test_auto_falls_back_past_a_failing_length_and_names_it(faulty, faulty_bf16, caplog):
    with caplog.at_level(logging.INFO, logger="hindsight.backend_check"):
        embedder = load_embedder("minilm", changed(faulty, index={"minilm_backend": "auto"}))
    assert embedder.backend == "torch"  # the next in auto's order: fp32, the reference
    warning = next(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "torch-bf16" in warning and f"input length {BAD}:" in warning and "auto falls back" in warning
    (skipped,) = embedder.backend_check["skipped"]
    assert skipped["backend"] == "torch-bf16" and skipped["length"] == BAD and skipped["drift"] > 0.015
    (path,) = faulty.index.backend_check_dir.glob("minilm-torch-bf16-*.json")
    verdict = json.loads(path.read_text())
    assert verdict["verdict"] == "fail" and [f["length"] for f in verdict["failed"]] == [BAD]
    assert verdict["lengths"] == solo.lengths(256) and verdict["per_length"]["32"] < 0.015
    assert verdict["key"]["cpu_flags"] and verdict["key"]["libraries"]["torch"] == version("torch")


def test_an_explicit_backend_refuses_unless_overridden(faulty, faulty_bf16, caplog):
    named = changed(faulty, index={"minilm_backend": "torch-bf16"})
    with pytest.raises(check.BackendCheckFailed) as refused:
        load_embedder("minilm", named)
    message = str(refused.value)
    assert f"minilm backend torch-bf16 fails this machine's backend check at input length {BAD}: drift" in message
    assert "HINDSIGHT_ALLOW_FAILED_BACKEND" in message and "hindsight index build" in message
    with caplog.at_level(logging.WARNING, logger="hindsight.backend_check"):
        used = load_embedder("minilm", changed(named, index={"allow_failed_backend": True}))
    assert used.backend == "torch-bf16" and used.backend_check["overridden"] is True
    assert any("used anyway" in r.getMessage() for r in caplog.records)


def test_a_backend_known_to_fail_here_is_not_loaded_again(faulty, faulty_bf16, monkeypatch):
    """Its cached verdict is read by the revision before the backend is built: auto skips it and an explicit choice
    refuses it without loading its model at every start (a failing openvino-int8 compiled a copy per core first)."""
    auto = changed(faulty, index={"minilm_backend": "auto"})
    load_embedder("minilm", auto)  # probed here, or by an earlier test of this module
    built: list[str] = []
    real = minilm.MiniLMEmbedder

    def counted(**kwargs):
        built.append(kwargs["backend"])
        return real(**kwargs)

    monkeypatch.setattr(minilm, "MiniLMEmbedder", counted)
    again = load_embedder("minilm", auto)
    assert again.backend == "torch" and again.backend_check["skipped"][0]["backend"] == "torch-bf16"
    with pytest.raises(check.BackendCheckFailed, match=f"input length {BAD}"):
        load_embedder("minilm", changed(faulty, index={"minilm_backend": "torch-bf16"}))
    assert built == ["torch"]
    assert minilm.revision("torch-bf16") == faulty_bf16.revision  # what the verdict is read by
    assert minilm.revision("torch") == again.revision


def test_a_second_start_probes_nothing(checks, monkeypatch, caplog):
    named = changed(checks, index={"minilm_backend": "torch-bf16"})
    first = load_embedder("minilm", named).backend_check  # probed here, or by an earlier test of this module
    assert first["verdict"] == "pass" and first["lengths_checked"] == 32 and first["worst"]["drift"] < 0.015

    def no_probe(*args, **kwargs):
        raise AssertionError("probed again")

    monkeypatch.setattr(check, "probe", no_probe)
    with caplog.at_level(logging.INFO, logger="hindsight.backend_check"):
        again = load_embedder("minilm", named).backend_check
    assert again == first and not caplog.records
    # another machine (other CPU flags) or another library version is another key: probed anew
    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"avx2", "another-cpu"}))
    assert check.cached("minilm", "torch-bf16", again["revision"], named) is None
    assert check.status("minilm", "torch", "r", named)["verdict"] == "reference"  # fp32 is never probed


def test_an_index_whose_backend_fails_here_is_not_used_to_score(checks, faulty, request):
    """Built where torch-bf16 passed; served on a machine (here: the same, with the fault injected and its verdict
    folder) where it fails at one length: refused, naming the backend, the length and the rebuild command."""
    lines = (ROOT / "data/papers.jsonl").read_text().splitlines()
    ingest_bytes("\n".join(lines[:6]).encode(), "a.jsonl", db_path=checks.db_path)
    built = build_index(changed(checks, index={"minilm_backend": "torch-bf16"}))
    assert built.manifest["backend_check"]["verdict"] == "pass"
    assert built.manifest["backend_check"]["backend"] == "torch-bf16"
    # the fault after the build: the build probes torch-bf16 itself when no earlier test of the module did
    request.getfixturevalue("faulty_bf16")
    holder = IndexHolder(changed(faulty, index={"minilm_backend": "torch"}))
    with pytest.raises(NoIndex, match=f"torch-bf16 fails this machine's backend check at input length {BAD}.*"
                                      "hindsight index build"):
        holder.embedder_for(holder.current())
    assert holder.status()["backend_check"]["verdict"] == "fail"  # what /readyz shows


@pytest.mark.server  # CLI subprocesses
def test_index_status_shows_the_verdict_and_a_second_start_keeps_it(settings, tmp_path):
    checks = changed(settings, index={"backend_check_dir": tmp_path / "checks"})
    lines = (ROOT / "data/papers.jsonl").read_text().splitlines()
    ingest_bytes("\n".join(lines[:6]).encode(), "a.jsonl", db_path=checks.db_path)
    env = {"HINDSIGHT_BACKEND_CHECK_DIR": str(checks.index.backend_check_dir), "HINDSIGHT_MINILM_BACKEND": "torch-bf16",
           "HINDSIGHT_VERIFIER": "none"}
    proc = run_cli(checks.home, "index", "status", "--json", env=env)
    assert proc.returncode != 0 or json.loads(proc.stdout)["backend_check"] is None  # no index yet
    built = run_cli(checks.home, "index", "build", "--json", env=env)
    assert built.returncode == 0, built.stderr[-2000:]
    first = json.loads(run_cli(checks.home, "index", "status", "--json", env=env).stdout)["backend_check"]
    assert first["backend"] == "torch-bf16" and first["verdict"] == "pass" and first["lengths_checked"] == 32
    assert {"worst", "checked_at", "seconds", "lengths"} <= set(first)
    (verdict,) = checks.index.backend_check_dir.glob("minilm-torch-bf16-*.json")
    written = verdict.stat().st_mtime_ns
    scored = run_cli(checks.home, "score", str(ROOT / "data/ideas/rag.jsonl"), "--system", "s", "--run", "r",
                     "--json", env=env)
    assert scored.returncode == 0, scored.stderr[-2000:]
    assert verdict.stat().st_mtime_ns == written  # a second start: no probe, nothing written
    again = json.loads(run_cli(checks.home, "index", "status", "--json", env=env).stdout)["backend_check"]
    assert again == first


@pytest.mark.server  # converts the model to an int8 IR (about 20 s) and probes it
@pytest.mark.skipif(not openvino_backend.available(), reason="openvino-int8 needs a CPU with int8 dot products")
def test_openvino_int8_passes_at_every_length_here(settings, tmp_path, ir_dir):
    checks = changed(settings, index={"backend_check_dir": tmp_path / "checks"})
    ov = MiniLMEmbedder(backend="openvino-int8", export_dir=ir_dir)
    verdict = check.verdict(ov, checks, lambda: MiniLMEmbedder(backend="torch"))
    assert verdict["verdict"] == "pass" and verdict["lengths_checked"] == 32, verdict["per_length"]
    assert verdict["worst"]["drift"] < 0.015


@pytest.mark.server  # compiles the int8 IR in bf16 and probes it
@pytest.mark.skipif(not (openvino_backend.available() and cpu.native_bf16()),
                    reason="the bf16 fault of OpenVINO's attention needs a CPU with native bf16 (AVX-512 BF16 / AMX)")
def test_the_check_catches_the_bf16_fault_it_was_made_for(settings, tmp_path, ir_dir, monkeypatch):
    """OpenVINO 2026.4.1 compiled in bf16 was wrong at exactly 32 tokens on a Sapphire Rapids class CPU (worst drift
    0.148): the check fails that length and no other."""
    checks = changed(settings, index={"backend_check_dir": tmp_path / "checks"})
    MiniLMEmbedder(backend="openvino-int8", export_dir=ir_dir)  # converted once for the session
    # a copy of the IR without its compiled-model cache: OpenVINO 2026.4.1 crashed compiling one IR in f32 and then
    # in bf16 in one process with one CACHE_DIR
    (xml,) = ir_dir.glob("minilm-*-openvino-int8-*/model.xml")
    shutil.copytree(xml.parent, tmp_path / "models" / xml.parent.name, ignore=shutil.ignore_patterns("compiled"))
    monkeypatch.setattr(openvino_backend, "precision", lambda: "bf16")
    minilm._openvino.cache_clear()
    try:
        ov = MiniLMEmbedder(backend="openvino-int8", export_dir=tmp_path / "models")
        verdict = check.verdict(ov, checks, lambda: MiniLMEmbedder(backend="torch"))
    finally:
        minilm._openvino.cache_clear()
    bad = [f["length"] for f in verdict["failed"]]
    # the release measured wrong at 32 tokens on CPUs with AMX; on an AMD EPYC with AVX-512 BF16 and no AMX it
    # compiled right (worst drift 0.008, at 8 tokens, 2026-12-06)
    if version("openvino") == "2026.4.1" and any(f.startswith("amx") for f in cpu.cpu_flags()):
        assert verdict["verdict"] == "fail" and bad == [32], verdict["per_length"]
    else:  # another release may have fixed it; whatever it gets wrong, the check names
        assert verdict["verdict"] == "pass" or bad, verdict["per_length"]
