"""The local runtime's first-use probe: a child process evaluates a fixed prompt; a crash, a hang or an answer off
the model's shipped reference makes the model unavailable with the reason, and the verdict is kept per machine.

The crash is a real SIGSEGV of a real child process; the tiny GGUF carries its own reference (made here in process);
the packaged model's reference ships in indexing/llm/probe_refs.json."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from indexing.llm import ModelUnavailable
from indexing.llm import probe
from indexing.llm.model_files import JOINED_SHA256, file_sha256

needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                                 reason="llama-cpp-python is not installed (the `verifier` extra)")
SEGFAULT = "import ctypes, sys; print('system info: CPU : AVX512 = 1 | AMX_INT8 = 1 |', file=sys.stderr); " \
           "ctypes.string_at(0)"


def prints(probs: list[float]) -> list[str]:
    return [sys.executable, "-c", f"print({json.dumps(json.dumps({'probs': probs}))})"]


def refs(tmp_path: Path, sha: str, probs: list[float], tolerance: float = probe.TOLERANCE) -> Path:
    path = tmp_path / "refs.json"
    path.write_text(json.dumps({sha: {"probs": probs, "tolerance": tolerance, "made_on": "a test"}}))
    return path


def test_a_crash_is_an_error_naming_the_signal_and_the_amx_build(tmp_path: Path) -> None:
    cache = tmp_path / "probe.json"
    with pytest.raises(ModelUnavailable, match=r"crashed with SIGSEGV.*AMX_INT8 = 1.*scripts/setup.sh") as err:
        probe.ensure(tmp_path / "m.gguf", "a" * 64, cache=cache, command=[sys.executable, "-c", SEGFAULT])
    assert "m.gguf" in str(err.value) and str(cache) in str(err.value)
    # kept: a later start asks no child (this one would pass) and refuses the same way
    with pytest.raises(ModelUnavailable, match="crashed with SIGSEGV"):
        probe.ensure(tmp_path / "m.gguf", "a" * 64, cache=cache, command=prints([0.1, 0.8, 0.05, 0.05]))


def test_an_answer_off_the_reference_is_an_error_and_one_within_passes(tmp_path: Path) -> None:
    ref = refs(tmp_path, "b" * 64, [0.02, 0.95, 0.02, 0.01])
    with pytest.raises(ModelUnavailable, match=r"answers the probe wrongly.*P\(B\) = 0.500 where 0.950"):
        probe.ensure(tmp_path / "m.gguf", "b" * 64, cache=tmp_path / "c1.json", refs=ref,
                     command=prints([0.3, 0.5, 0.1, 0.1]))
    verdict = probe.ensure(tmp_path / "m.gguf", "b" * 64, cache=tmp_path / "c2.json", refs=ref,
                           command=prints([0.03, 0.93, 0.03, 0.01]))
    assert verdict.ok and verdict.checked == "answer"


def test_no_reference_checks_that_it_runs_and_gives_a_distribution(tmp_path: Path) -> None:
    verdict = probe.ensure(tmp_path / "m.gguf", "c" * 64, cache=tmp_path / "c.json", refs=tmp_path / "none.json",
                           command=prints([0.25, 0.25, 0.25, 0.25]))
    assert verdict.ok and verdict.checked == "runs" and "not what it answers" in verdict.reason
    with pytest.raises(ModelUnavailable, match="not a distribution"):
        probe.ensure(tmp_path / "m.gguf", "c" * 64, cache=tmp_path / "c2.json", refs=tmp_path / "none.json",
                     command=prints([float("nan"), 0.5, 0.25, 0.25]))
    with pytest.raises(ModelUnavailable, match=r"failed \(exit 3"):
        probe.ensure(tmp_path / "m.gguf", "c" * 64, cache=tmp_path / "c3.json",
                     command=[sys.executable, "-c", "raise SystemExit(3)"])


def test_the_verdict_is_kept_per_model_and_shared_by_homes(tmp_path: Path) -> None:
    cache = tmp_path / "machine.json"
    first = probe.ensure(tmp_path / "home1" / "m.gguf", "d" * 64, cache=cache, command=prints([0.4, 0.2, 0.2, 0.2]))
    again = probe.ensure(tmp_path / "home2" / "m.gguf", "d" * 64, cache=cache,
                         command=[sys.executable, "-c", SEGFAULT])  # not run: the verdict is known
    assert again == first
    with pytest.raises(ModelUnavailable):  # another model is probed
        probe.ensure(tmp_path / "m.gguf", "e" * 64, cache=cache, command=[sys.executable, "-c", SEGFAULT])
    assert len(json.loads(cache.read_text())) == 2


def test_the_packaged_model_ships_its_reference() -> None:
    ref = json.loads(probe.REFS.read_text())[JOINED_SHA256]
    assert len(ref["probs"]) == len(probe.LABELS) and sum(ref["probs"]) == pytest.approx(1.0, abs=1e-6)
    assert max(ref["probs"]) == ref["probs"][probe.LABELS.index("B")]  # the North Sea
    assert ref["tolerance"] == probe.TOLERANCE and "AMX" in ref["made_on"]  # the CPU and build it was made on


@needs_llama
@pytest.mark.server  # a llama.cpp child process
def test_the_tiny_model_passes_against_its_own_reference_and_fails_against_another(tiny_model: Path,
                                                                                    tmp_path: Path) -> None:
    sha = file_sha256(tiny_model)
    own = probe.answer(tiny_model)  # in process: the reference this model carries
    verdict = probe.ensure(tiny_model, sha, cache=tmp_path / "c1.json", refs=refs(tmp_path, sha, own))
    assert verdict.ok and verdict.checked == "answer"
    assert verdict.probs == pytest.approx(own, abs=1e-4)
    other = [own[1], own[0], own[3], own[2]] if abs(own[0] - own[1]) > 0.1 else [1.0, 0.0, 0.0, 0.0]
    with pytest.raises(ModelUnavailable, match="answers the probe wrongly"):
        probe.ensure(tiny_model, sha, cache=tmp_path / "c2.json", refs=refs(tmp_path, sha, other))
