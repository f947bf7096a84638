"""The CMake options that build llama.cpp (llama-cpp-python) for the CPU that builds it, without its AMX path.

llama.cpp's default build is GGML_NATIVE (-march=native): on a CPU with AMX it compiles the AMX int8 kernels, and
on a Sapphire Rapids Xeon those crash the packaged model inside decode (SIGSEGV; docs/llm.md). Here every instruction
set the CPU reports is named on its own (GGML_NATIVE=OFF) and the AMX options are off, so an AVX2-only CPU gets an
AVX2 build and an AVX-512 one keeps AVX-512, VNNI and BF16. Standard library only: setup.sh runs it before the
project's dependencies are installed.

    python scripts/llama_build.py            # CMAKE_ARGS for this CPU
    python scripts/llama_build.py --flags "avx avx2 fma f16c"
"""

import argparse
import re
from collections.abc import Iterable
from pathlib import Path

# GGML option -> the /proc/cpuinfo flags it needs (all of them)
X86 = {
    "GGML_SSE42": ("sse4_2",),
    "GGML_AVX": ("avx",),
    "GGML_F16C": ("f16c",),
    "GGML_FMA": ("fma",),
    "GGML_BMI2": ("bmi2",),
    "GGML_AVX2": ("avx2",),
    "GGML_AVX_VNNI": ("avx_vnni",),
    # llama.cpp compiles GGML_AVX512 with -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw
    "GGML_AVX512": ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"),
    "GGML_AVX512_VBMI": ("avx512f", "avx512vbmi"),
    "GGML_AVX512_VNNI": ("avx512f", "avx512_vnni"),
    "GGML_AVX512_BF16": ("avx512f", "avx512_bf16"),
}
OFF = ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")  # the path that crashes; off whatever the CPU has


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flags line of /proc/cpuinfo's first processor (x86 `flags`, Arm `Features`)."""
    found = re.search(r"^(?:flags|Features)\s*:(.*)$", cpuinfo, re.MULTILINE)
    return set(found.group(1).split()) if found else set()


def cmake_args(flags: Iterable[str]) -> str:
    """CMAKE_ARGS for an x86 CPU with these flags; on any other CPU (no x86 flags) llama.cpp's native default."""
    have = set(flags)
    if "sse2" not in have and "avx" not in have:
        return ""
    on = ["-DGGML_NATIVE=OFF"] + [f"-D{opt}={'ON' if set(need) <= have else 'OFF'}" for opt, need in X86.items()]
    return " ".join(on + [f"-D{opt}=OFF" for opt in OFF])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flags", help="space-separated CPU flags (default: this CPU's, from /proc/cpuinfo)")
    args = parser.parse_args()
    if args.flags is not None:
        flags = set(args.flags.split())
    else:
        try:
            flags = cpu_flags(Path("/proc/cpuinfo").read_text())
        except OSError:
            flags = set()
    print(cmake_args(flags))


if __name__ == "__main__":
    main()
