"""Each benchmark script runs end to end with a tiny --n (the model-loading ones are opt-in: HINDSIGHT_SLOW=1)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, SHARED_DATA

pytestmark = pytest.mark.server
SHARED = SHARED_DATA / "paperlists"
slow = pytest.mark.skipif(os.environ.get("HINDSIGHT_SLOW") != "1", reason="slow: set HINDSIGHT_SLOW=1")
shared = pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/data/paperlists")


def bench(name: str, *args: str, timeout: int = 600) -> str:
    env = {**os.environ, "HINDSIGHT_HOME": str(Path(os.environ.get("TMPDIR", "/tmp")) / "hindsight-bench-unused")}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / name), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def test_index_scale_tiny():
    out = bench("index_scale.py", "--n", "1500", "--queries", "32")
    assert "flat" in out and "ivf-flat" in out and "hnsw32-flat" in out and "summary" in out


def test_filtered_search_tiny():
    out = bench("filtered_search.py", "--n", "2000", "--dim", "64", "--rounds", "1")
    assert "recall_at_20_filtered" in out and "worst filtered/unfiltered ratio" in out and "cached_overhead_ms" in out


@shared
def test_corpus_writes_pairs_and_ideas(tmp_path):
    out = bench("corpus.py", "--out", str(tmp_path))
    assert "pairs.jsonl" in out and (tmp_path / "ideas.jsonl").stat().st_size > 0


@pytest.mark.slow
@slow
@shared
def test_build_speed_tiny():
    pytest.importorskip("onnxruntime", reason="the ONNX backend needs the [onnx] extra")
    out = bench("build_speed.py", "--n", "16", "--rounds", "1", "--candidates", "torch", "onnx", "torch-bf16@2",
                "auto", "onnx-int8:batched")
    assert "\nonnx " in out and "ratio" in out and "auto=" in out and "start-up (once per build" in out
    assert "\nonnx-int8:batched " in out  # the encode builds ran before solo inputs, beside today's


@pytest.mark.slow
@slow
@shared
def test_build_speed_specter2_tiny():
    out = bench("build_speed.py", "--model", "specter2", "--n", "4", "--rounds", "1", "--candidates", "torch-bf16",
                "--drift-n", "4", "--project", "1000")
    assert "BERT-base + seq_bn adapter" in out and "projected" in out and "\ntorch-bf16 " in out


@pytest.mark.slow
@slow
@shared
def test_specter2_build_tiny():
    out = bench("specter2_build.py", "--n", "6", "--baseline-n", "3", "--candidates", "torch-bf16")
    assert "round 1: torch 3 papers" in out and "torch-bf16 6 papers" in out and "projected" in out


@pytest.mark.slow
@slow
@shared
def test_incremental_tiny():
    out = bench("incremental.py", "--n", "40", "--new-share", "0.05")
    assert "rebuild / full build" in out and "2 embedded" in out


@pytest.mark.slow
@slow
@shared
def test_scoring_tiny():
    out = bench("scoring.py", "--n", "12", "--requests", "2", "--batches", "1", "2", "--large", "8")
    assert "HTTP overhead at batch 2" in out and "event loop stays free" in out


@pytest.mark.slow
@slow
def test_startup_tiny():
    out = bench("startup.py", "--rounds", "1")
    assert "pip --help" in out and "index status --json" in out and "serve to first score" in out
    assert "<= 3x" in out and "within 15 s" in out
