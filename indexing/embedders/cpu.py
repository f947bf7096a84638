"""What this CPU offers the embedding backends: its instruction flags, native bf16, int8 dot products, usable cores.

Its own module so that the backend choice (runtime.py), the OpenVINO backend and the worker processes read the same
facts without importing each other.
"""

import hashlib
import os
from functools import lru_cache
from pathlib import Path

INT8_DOT = {"avx512_vnni", "avx_vnni", "amx_int8", "asimddp"}  # x86 VNNI / AMX, Arm dot-product instructions


@lru_cache
def cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def fingerprint() -> str:
    """A short hash of this CPU's flags: what names the machine in the keys of things made for it (a backend's
    verdict, an optimised graph)."""
    return hashlib.sha256(" ".join(sorted(cpu_flags())).encode()).hexdigest()[:16]


def native_bf16() -> bool:
    """True where bf16 matrix products run in hardware (x86 AVX-512 BF16 / AMX, Arm BF16)."""
    return bool(cpu_flags() & {"avx512_bf16", "amx_bf16", "bf16"})


def int8_dot() -> bool:
    """True where the CPU has int8 dot-product instructions (what openvino-int8's kernels need to be fast)."""
    return bool(cpu_flags() & INT8_DOT)


def cores() -> int:
    """The cores this process may run on (its affinity, which a container or taskset narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
