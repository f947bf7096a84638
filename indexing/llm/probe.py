"""The local runtime's first-use probe: before a GGUF is used on a machine, a child process evaluates a fixed prompt
with it and reads the answer's probabilities; the parent compares them with a reference shipped for the model's hash
(probe_refs.json, made on a CPU where the model is known to run). A child that crashes (llama.cpp's AMX path on a
Sapphire Rapids Xeon segfaults in decode), hangs or answers outside the tolerance makes the model unavailable with
the reason, instead of taking the caller's process down. The verdict is kept per machine, keyed by the CPU's flags,
the llama.cpp build and the model's hash, so later starts pay nothing (docs/llm.md).

A model with no shipped reference (a file of HINDSIGHT_VERIFIER_MODEL_PATH, the tests' tiny models) is checked to
run and to give finite probabilities; what it answers is not checked. HINDSIGHT_LLM_PROBE=false skips the probe.
"""

import hashlib
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Any

from indexing.embedders.cpu import cpu_flags
from indexing.llm.errors import ModelUnavailable
from indexing.llm.model_files import model_file
from indexing.llm.worker import signal_name
from indexing.settings import Settings

REFS = Path(__file__).with_name("probe_refs.json")
TOLERANCE = 0.05  # most any label's probability may move from its reference (builds round differently: < 0.01)
TIMEOUT = 600.0  # seconds: loading and one prompt take a few on 2 cores; a hang is a failure
CTX = 1024
# A question whose answer is clear but not certain, so that the labels' shares say whether the arithmetic is right;
# long enough (about 170 tokens) that the prompt runs llama.cpp's batched matrix kernels, then one more token
# reads the decode path.
SYSTEM = "You are a careful assistant. Answer multiple-choice questions with the letter of the answer only."
PROMPT = ("Read the passage and answer the question.\n\n"
          "Passage: The Rhine rises in the Swiss Alps, forms part of the border between Switzerland and Germany and "
          "between France and Germany, flows north through the Rhineland and the Netherlands, and reaches the North "
          "Sea near Rotterdam. Cities on its banks include Basel, Strasbourg, Mannheim, Mainz, Cologne and "
          "Duesseldorf. It is one of the busiest waterways in Europe, carrying coal, grain and containers between "
          "the sea ports and the industrial regions inland.\n\n"
          "Question: Into which sea does the Rhine flow?\n"
          "A) The Baltic Sea\nB) The North Sea\nC) The Mediterranean Sea\nD) The Black Sea\n\nAnswer:")
LABELS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    checked: str  # "answer" (against a shipped reference) or "runs" (no reference for this model)
    reason: str
    probs: list[float] | None
    seconds: float
    at: float  # when the probe ran (Unix time)


def machine_cache() -> Path:
    """Where verdicts are kept: one file per machine user, shared by every HINDSIGHT_HOME (the test suite's many)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hindsight" / "llm-probe.json"


def build_id() -> str:
    """llama-cpp-python's version and its native libraries' sizes and times: a rebuild with other options (the AMX
    path left out) is another build, so a verdict about the old one is not reused."""
    spec = util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return "none"
    lib = Path(list(spec.submodule_search_locations)[0]) / "lib"
    stats = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in lib.glob("*.so*") if p.is_file())
    digest = hashlib.sha256(json.dumps(stats).encode()).hexdigest()[:16]
    return f"{metadata.version('llama-cpp-python')}+{digest}"


def key(sha256: str) -> str:
    """The verdict's key: this CPU's flags, the llama.cpp build, the model's hash."""
    return hashlib.sha256(json.dumps([sorted(cpu_flags()), build_id(), sha256]).encode()).hexdigest()


def _read(cache: Path) -> dict:
    try:
        return dict(json.loads(cache.read_text()))
    except (OSError, ValueError):
        return {}


def _store(cache: Path, name: str, entry: dict) -> None:
    """Add one verdict (written beside the file, then renamed: a reader never sees half a file)."""
    cache.parent.mkdir(parents=True, exist_ok=True)
    known = _read(cache)
    known[name] = entry
    partial = cache.with_name(f"{cache.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(known, indent=1, sort_keys=True))
    os.replace(partial, cache)


def _system_info(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("system info:")]
    return lines[-1].removeprefix("system info:").strip() if lines else ""


def run_probe(path: Path, sha256: str, *, refs: Path = REFS, command: list[str] | None = None,
              timeout: float = TIMEOUT) -> Verdict:
    """Evaluate the probe in a child process and judge its answer (command: the child, for tests)."""
    started = time.time()
    cmd = command or [sys.executable, "-m", "indexing.llm.probe", str(path)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Verdict(False, "runs", f"the probe did not finish in {timeout:.0f} s", None,
                       time.time() - started, started)
    seconds = time.time() - started
    info = _system_info(done.stderr)
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["no message"]
        how = (f"crashed with {signal_name(done.returncode)}" if done.returncode < 0
               else f"failed (exit {done.returncode}: {last[0]})")
        hint = ("; llama.cpp's system info reports AMX_INT8 = 1, the path that crashes on this CPU: rebuild it "
                "without AMX with scripts/setup.sh (docs/llm.md)") if "AMX_INT8 = 1" in info else ""
        return Verdict(False, "runs", f"llama.cpp {how} evaluating the probe prompt{hint}", None, seconds, started)
    try:
        probs = [float(p) for p in json.loads(done.stdout.strip().splitlines()[-1])["probs"]]
    except (ValueError, KeyError, IndexError, TypeError):
        return Verdict(False, "runs", f"the probe printed no answer: {done.stdout[-300:]!r}", None, seconds, started)
    if not all(math.isfinite(p) for p in probs) or not math.isclose(sum(probs), 1.0, abs_tol=1e-3):
        return Verdict(False, "runs", f"the answer's probabilities are not a distribution: {probs}", probs,
                       seconds, started)
    ref = _read(refs).get(sha256)
    if ref is None:
        return Verdict(True, "runs", "no reference answer ships for this model: checked that it runs, not what it "
                       "answers", probs, seconds, started)
    tolerance = float(ref.get("tolerance", TOLERANCE))
    worst = max(range(len(LABELS)), key=lambda i: abs(probs[i] - ref["probs"][i]))
    moved = abs(probs[worst] - ref["probs"][worst])
    if moved > tolerance:
        return Verdict(False, "answer", f"the model answers the probe wrongly on this machine: P({LABELS[worst]}) "
                       f"= {probs[worst]:.3f} where {ref['probs'][worst]:.3f} +- {tolerance} is expected (reference "
                       f"made on {ref.get('made_on', 'another CPU')}); llama.cpp's system info: {info or 'unknown'}",
                       probs, seconds, started)
    return Verdict(True, "answer", f"within {tolerance} of the reference (largest move {moved:.4f})", probs,
                   seconds, started)


def ensure(path: Path, sha256: str, *, cache: Path | None = None, refs: Path = REFS,
           command: list[str] | None = None) -> Verdict:
    """The model's verdict on this machine, probing on first use; ModelUnavailable when it failed."""
    cache = cache or machine_cache()
    name = key(sha256)
    known = _read(cache).get(name)
    if known is not None:
        verdict = Verdict(**{f: known[f] for f in Verdict.__dataclass_fields__})
    else:
        verdict = run_probe(path, sha256, refs=refs, command=command)
        _store(cache, name, {**asdict(verdict), "model": sha256, "build": build_id()})
    if not verdict.ok:
        raise ModelUnavailable(f"{path}: the local model failed its first-use probe on this machine: "
                               f"{verdict.reason} (verdict kept in {cache}; HINDSIGHT_LLM_PROBE=false skips the probe)")
    return verdict


def local_model(settings: Settings) -> tuple[Path, dict[str, Any]]:
    """The local model's file, probed on this machine unless the settings turn the probe off, and the options the
    verifier's and the judge's runtimes take from the settings (its sha256, threads, ctx)."""
    path, sha = model_file(settings)
    if settings.llm.llm_probe:
        ensure(path, sha)
    return path, {"sha256": sha, "threads": settings.llm.verifier_threads, "ctx": settings.llm.verifier_ctx}


def answer(path: Path) -> list[float]:
    """The probe's label probabilities, evaluated here (the child's work)."""
    from indexing.llm.runtime import LlamaRuntime

    runtime = LlamaRuntime(path, system=SYSTEM, threads=0, ctx=CTX)
    labels = [runtime.label_tokens([label]) for label in LABELS]
    probs, _mass = runtime.label_probs(runtime._system, runtime._tokens(PROMPT + runtime._answer), labels)
    return probs


def main() -> None:
    import llama_cpp

    # first, so that the parent can name the build even when the evaluation crashes
    print("system info:", llama_cpp.llama_print_system_info().decode(errors="replace"), file=sys.stderr, flush=True)
    print(json.dumps({"probs": answer(Path(sys.argv[1]))}), flush=True)


if __name__ == "__main__":
    main()
