"""The embedding backend's self-check on the machine it runs on (docs/cpu-checks.md).

A backend's kernels are chosen by the CPU, the library release and the input's shape, so a backend right on one
machine can be wrong on another, at one input length only (OpenVINO's bf16 attention at exactly 32 tokens on a
Sapphire Rapids class CPU). So the first load of a backend on a machine encodes probe texts at every input length it
is fed (solo.lengths), compares them with fp32 torch vectors of the same weights, and fails a length where a probe's
drift (1 - cosine) exceeds the model's bound. The verdict is cached per machine in a per-user folder that every
HINDSIGHT_HOME shares (HINDSIGHT_BACKEND_CHECK_DIR), keyed by the CPU's flags, the libraries' versions, the model's
revision (weights and backend) and the backend's precision, so later starts read a file and probe nothing.

`auto` skips a failing backend for the next in its order, with a warning naming backend, length and drift; a backend
named explicitly (a setting, an index's manifest) refuses with the same message unless HINDSIGHT_ALLOW_FAILED_BACKEND
is set. fp32 torch is the reference and is not probed.
"""

import hashlib
import json
import logging
import os
import platform
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from indexing.embedders import cpu, solo
from indexing.embedders.base import Embedder

log = logging.getLogger("hindsight.backend_check")

REFERENCE = "torch"  # fp32 torch: what every other backend is compared with
# the largest drift (1 - cosine to fp32) a probe may have: the models' drift bounds (docs/benchmarks.md), for the
# float backends and static int8 (openvino-int8: worst probe 0.007 on MiniLM); dynamic int8 takes its activation
# scales from each text, so its drift spreads wider around its mean: onnx-int8 (mean 0.010 on MiniLM, worst probe
# 0.016 at 256 tokens on an AVX-512 VNNI CPU) is held to twice the bound, torch-int8 (mean 0.019, worst probe 0.031;
# never picked by auto) to 3.5 times. A fault like OpenVINO's bf16 one (0.148) fails either way.
BOUNDS = {"minilm": 0.015, "specter2": 0.01}
SPREAD = {"onnx-int8": 2.0, "torch-int8": 3.5}


def bound(model: str, backend: str) -> float:
    """The drift a probe of this model and backend may have."""
    return round(BOUNDS.get(model, 0.015) * SPREAD.get(backend, 1.0), 6)
PROBES_PER_LENGTH = 3  # texts per input length, padded by different amounts
LIBRARIES = ("torch", "transformers", "tokenizers", "sentence-transformers", "onnxruntime", "openvino", "nncf",
             "numpy")
CHECK_VERSION = 2  # bump when the probes or the rule change: every verdict is then made again


class BackendCheckFailed(ValueError):
    """A backend named explicitly fails this machine's check (a ValueError: callers that refuse a backend that cannot
    run here, e.g. cuda-fp16 without CUDA, refuse this one the same way)."""

    def __init__(self, message: str, verdict: dict) -> None:
        super().__init__(message)
        self.verdict = verdict


def default_dir() -> Path:
    """The per-user cache folder every HINDSIGHT_HOME of this user shares."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hindsight" / "backend-checks"


def check_dir(settings: Any) -> Path:
    return Path(getattr(getattr(settings, "index", None), "backend_check_dir", None) or default_dir())


def precision(backend: str) -> str:
    """The arithmetic a backend runs in (part of the key; the revision names it too)."""
    if backend == "openvino-int8":
        from indexing.embedders import openvino_backend

        return f"int8+{openvino_backend.precision()}"
    return {"torch": "fp32", "onnx": "fp32", "torch-bf16": "bf16", "cuda-fp16": "fp16"}.get(backend, "int8")


@lru_cache(maxsize=1)
def _versions() -> dict[str, str | None]:
    """Read once per process (each lookup scans the installed distributions; /readyz shows the verdict)."""
    out: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def key(model: str, backend: str, revision: str) -> dict:
    """What a verdict holds for: this CPU, these libraries, these weights and backend."""
    return {"check": CHECK_VERSION, "probes_per_length": PROBES_PER_LENGTH, "model": model, "backend": backend,
            "revision": revision,
            "precision": precision(backend), "machine": platform.machine(),
            "cpu_flags": cpu.fingerprint(),
            "libraries": dict(_versions())}


def _path(folder: Path, fields: dict) -> Path:
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]
    return folder / f"{fields['model']}-{fields['backend']}-{digest}.json"


def cached(model: str, backend: str, revision: str, settings: Any) -> dict | None:
    """The verdict this machine holds for the backend (no model is loaded, nothing is probed); None when it was never
    checked here under these versions. fp32 torch is the reference: always {verdict: reference}."""
    if backend == REFERENCE:
        return {"backend": backend, "model": model, "revision": revision, "verdict": "reference"}
    path = _path(check_dir(settings), key(model, backend, revision))
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def status(model: str, backend: str, revision: str, settings: Any) -> dict:
    """The verdict as `index status --json` and the health answer show it."""
    found = cached(model, backend, revision, settings)
    if found is None:
        return {"backend": backend, "model": model, "revision": revision, "verdict": "unchecked",
                "reason": "not loaded on this machine under these library versions yet: the first load probes it"}
    return shown(found)


def shown(verdict: dict) -> dict:
    """A verdict without its per-length table and key (the cached file keeps them)."""
    return {k: v for k, v in verdict.items() if k not in ("per_length", "key")}


def probe_texts(tokenizer: Any, max_tokens: int) -> dict[int, list[str]]:
    """PROBES_PER_LENGTH texts per input length of solo.lengths(max_tokens), each a word prefix of the packaged
    calibration abstracts (run together) whose token count pads to that length, padded by different amounts."""
    from indexing.embedders.openvino_backend import CALIBRATION

    count = _counter(tokenizer)
    rows = [json.loads(line) for line in CALIBRATION.read_text(encoding="utf-8").splitlines() if line.strip()]
    flat = [f"{r['title']} {r['abstract']}".split() for r in rows]
    step = max(1, max_tokens // solo.SHAPES)
    out: dict[int, list[str]] = {}
    for n, length in enumerate(solo.lengths(max_tokens)):
        texts: list[str] = []
        for j in range(PROBES_PER_LENGTH):
            words = [w for r in range(4) for w in flat[(n * PROBES_PER_LENGTH + j + r * 7) % len(flat)]]
            while count(" ".join(words)) < max_tokens + step:  # long enough for the longest length
                words = words + words
            target = length - (j * (step - 1)) // max(1, PROBES_PER_LENGTH - 1)  # padded by 0 .. step-1 tokens
            lo, hi = 1, len(words)
            while lo < hi:  # the longest prefix of at most target tokens
                mid = (lo + hi + 1) // 2
                if count(" ".join(words[:mid])) <= target:
                    lo = mid
                else:
                    hi = mid - 1
            text = " ".join(words[:lo])
            if solo.padded_length(min(count(text), max_tokens), max_tokens) == length:
                texts.append(text)
        out[length] = texts
    return out


def _counter(tokenizer: Any) -> Callable[[str], int]:
    """Token count (special tokens included, no truncation) by a private copy of the model's fast tokenizer."""
    from tokenizers import Tokenizer

    inner = getattr(tokenizer, "backend_tokenizer", tokenizer)
    copy = Tokenizer.from_str(inner.to_str())
    copy.no_truncation()
    copy.no_padding()
    return lambda text: len(copy.encode(text).ids)


def probe(embedder: Any, reference: Callable[[], Embedder], bound: float) -> dict:
    """Encode the probes with the embedder and with fp32 torch; the verdict (pass when no length has a probe past the
    bound), with every length's worst drift."""
    import numpy as np

    started = time.perf_counter()
    max_tokens = int(embedder.max_tokens)
    probes = probe_texts(embedder.tokenizer, max_tokens)
    texts = [t for ts in probes.values() for t in ts]
    got = embedder.encode(texts)
    want = reference().encode(texts)
    drift = 1.0 - np.sum(got * want, axis=1)
    per_length: dict[str, float] = {}
    i = 0
    for length, ts in probes.items():
        if ts:
            per_length[str(length)] = round(float(drift[i:i + len(ts)].max()), 6)
        i += len(ts)
    worst = max(per_length, key=lambda k: per_length[k])
    failed = [{"length": int(k), "drift": v} for k, v in per_length.items() if v > bound]
    return {"verdict": "fail" if failed else "pass", "bound": bound, "lengths_checked": len(per_length),
            "lengths": [int(k) for k in per_length], "probes": len(texts),
            "worst": {"length": int(worst), "drift": per_length[worst]}, "failed": failed,
            "per_length": per_length, "seconds": round(time.perf_counter() - started, 2)}


def verdict(embedder: Any, settings: Any, reference: Callable[[], Embedder]) -> dict:
    """This machine's verdict on the embedder's backend: read from the cache, else probed now and cached."""
    backend = str(embedder.backend)
    found = cached(embedder.key, backend, embedder.revision, settings)
    if found is not None:
        return found
    fields = key(embedder.key, backend, embedder.revision)
    result = {"backend": backend, "model": embedder.key, "revision": embedder.revision,
              **probe(embedder, reference, bound(embedder.key, backend)),
              "checked_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "key": fields}
    _write(_path(check_dir(settings), fields), result)
    log.info("backend check (once per machine and library versions): %s %s %s at %d input lengths, worst drift "
             "%.4f at length %d, in %.1f s", embedder.key, backend, result["verdict"], result["lengths_checked"],
             result["worst"]["drift"], result["worst"]["length"], result["seconds"])
    return result


def _write(path: Path, verdict: dict) -> None:
    """Atomically: two processes probing at once both write the same verdict."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".check-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(verdict, fh, indent=1)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def failure(verdict: dict) -> str:
    """What failed, as the warning and the refusal say it."""
    first = max(verdict["failed"], key=lambda f: f["drift"])
    lengths = ", ".join(str(f["length"]) for f in verdict["failed"])
    return (f"{verdict['model']} backend {verdict['backend']} fails this machine's backend check at input length "
            f"{first['length']}: drift {first['drift']:.4f} (1 - cosine to fp32 torch of the same weights) > bound "
            f"{verdict['bound']}" + (f" (failing lengths: {lengths})" if len(verdict["failed"]) > 1 else ""))


def setting_name(model: str) -> str:
    return f"HINDSIGHT_{model.upper()}_BACKEND"


def _known_failure(model: str, backend: str, settings: Any, revision: Callable[[str], str] | None) -> dict | None:
    """The failing verdict this machine holds for the backend, read before its embedder is loaded."""
    if revision is None or backend == REFERENCE:
        return None
    found = cached(model, backend, revision(backend), settings)
    return found if found is not None and found["verdict"] == "fail" else None


def checked(model: str, requested: str, settings: Any, build: Callable[[str], Embedder],
            order: Callable[[], list[str]], revision: Callable[[str], str] | None = None) -> Embedder:
    """The embedder of the requested backend if it passes this machine's check; `auto` tries order() in turn (fp32
    torch, the reference, always passes). The verdict is on the embedder as `backend_check`. revision(backend): the
    revision its embedder will have, where known without loading it, so that a backend known to fail here is skipped
    (or refused) without a load at every start."""
    explicit = requested != "auto"
    candidates = [requested] if explicit else order()
    reference: list[Embedder] = []

    def fp32() -> Embedder:
        if not reference:
            reference.append(build(REFERENCE))
        return reference[0]

    skipped: list[dict] = []
    for backend in candidates:
        embedder: Any = None
        found = _known_failure(model, backend, settings, revision)
        if found is None:
            embedder = fp32() if backend == REFERENCE else build(backend)
            found = (cached(model, backend, embedder.revision, settings) if backend == REFERENCE
                     else verdict(embedder, settings, fp32))
            assert found is not None
            if found["verdict"] != "fail":
                embedder.backend_check = {**shown(found), **({"skipped": skipped} if skipped else {})}
                return embedder
        message = failure(found)
        if explicit:
            if getattr(getattr(settings, "index", None), "allow_failed_backend", False):
                log.warning("%s; used anyway (HINDSIGHT_ALLOW_FAILED_BACKEND is set)", message)
                embedder = embedder or build(backend)
                embedder.backend_check = {**shown(found), "overridden": True}
                return embedder
            raise BackendCheckFailed(
                f"{message}; use another backend ({setting_name(model)}=auto picks the first that passes here) and "
                "rebuild the index with `hindsight index build`, or set HINDSIGHT_ALLOW_FAILED_BACKEND=true to use "
                "it anyway", found)
        log.warning("%s; auto falls back to the next backend", message)
        skipped.append({"backend": backend, "length": max(found["failed"], key=lambda f: f["drift"])["length"],
                        "drift": max(f["drift"] for f in found["failed"])})
    raise AssertionError("auto's order ends with the fp32 reference, which always passes")
