"""The llama.cpp build options setup.sh passes: every instruction set of the building CPU named on its own, never
the AMX path (it crashes the packaged model on Sapphire Rapids), and nothing an AVX2-only CPU lacks."""

from scripts.llama_build import cmake_args, cpu_flags

SAPPHIRE_RAPIDS = ("fpu sse2 sse4_1 sse4_2 avx f16c fma bmi1 avx2 bmi2 avx512f avx512dq avx512cd avx512bw avx512vl "
                   "avx_vnni avx512_bf16 avx512vbmi avx512_vnni amx_bf16 avx512_fp16 amx_tile amx_int8")
AVX2_ONLY = "fpu sse2 sse4_1 sse4_2 avx f16c fma bmi1 avx2 bmi2"


def options(args: str) -> dict[str, str]:
    return dict(a.removeprefix("-D").split("=") for a in args.split())


def test_an_amx_cpu_keeps_avx512_vnni_and_bf16_without_amx() -> None:
    got = options(cmake_args(SAPPHIRE_RAPIDS.split()))
    assert got["GGML_NATIVE"] == "OFF"  # -march=native would turn AMX back on
    assert {k for k, v in got.items() if k.startswith("GGML_AMX")} == {"GGML_AMX_TILE", "GGML_AMX_INT8",
                                                                        "GGML_AMX_BF16"}
    assert all(v == "OFF" for k, v in got.items() if k.startswith("GGML_AMX"))
    assert all(got[k] == "ON" for k in ("GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_AVX512", "GGML_AVX512_VNNI",
                                        "GGML_AVX512_BF16", "GGML_AVX512_VBMI", "GGML_AVX_VNNI"))


def test_an_avx2_cpu_gets_nothing_it_lacks() -> None:
    got = options(cmake_args(AVX2_ONLY.split()))
    assert got["GGML_AVX2"] == got["GGML_FMA"] == got["GGML_F16C"] == got["GGML_BMI2"] == "ON"
    assert all(v == "OFF" for k, v in got.items() if "AVX512" in k or "AMX" in k or k == "GGML_AVX_VNNI")


def test_an_avx_vnni_cpu_without_avx512_gets_avx_vnni_alone() -> None:
    """Alder Lake class: AVX-VNNI (-mavxvnni, 256-bit) without any AVX-512 option; Sandy Bridge class: AVX alone."""
    got = options(cmake_args((AVX2_ONLY + " avx_vnni").split()))
    assert got["GGML_AVX_VNNI"] == got["GGML_AVX2"] == "ON"
    assert all(v == "OFF" for k, v in got.items() if "AVX512" in k or "AMX" in k)
    old = options(cmake_args("fpu sse2 sse4_1 sse4_2 avx".split()))
    assert old["GGML_AVX"] == old["GGML_SSE42"] == "ON"
    assert all(v == "OFF" for k, v in old.items() if k not in ("GGML_AVX", "GGML_SSE42"))


def test_avx512f_alone_is_not_llama_cpps_avx512() -> None:
    """llama.cpp's GGML_AVX512 compiles with -mavx512cd/vl/dq/bw too: a CPU with only avx512f must not get it."""
    got = options(cmake_args((AVX2_ONLY + " avx512f avx512_vnni").split()))
    assert got["GGML_AVX512"] == "OFF" and got["GGML_AVX512_VNNI"] == "ON"


def test_another_architecture_keeps_llama_cpps_default() -> None:
    assert cmake_args("fp asimd evtstrm aes pmull sha1 sha2 crc32 asimddp".split()) == ""


def test_the_flags_line_of_cpuinfo_in_its_own_layouts() -> None:
    x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx2 amx_int8\nbugs\t\t: spectre_v1\n\n" \
          "processor\t: 1\nflags\t\t: fpu avx2 amx_int8 extra\n"
    assert cpu_flags(x86) == {"fpu", "avx2", "amx_int8"}
    arm = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd asimddp\n"
    assert cpu_flags(arm) == {"fp", "asimd", "asimddp"}
    assert cpu_flags("") == set()
