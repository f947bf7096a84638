"""Sharded IVF build on synthetic vectors: build time, peak RSS, recall@20 and latency against exact flat search.

    .venv/bin/python bench/sharded_build.py --n 1000000 --dim 768 --out /tmp/sharded --json result.json

Each phase runs in its own process so its peak RSS (ru_maxrss) is its own: `generate` writes the shards one at a
time, `build` streams them into the index (indexing.vectorindex.ivf.build_from_shards), `flat` loads every vector
into an exact IndexFlatIP for the reference answers and the flat latency.

The vectors are synthetic but not uniform: points around cluster centres in a 64-d latent space, projected to
`dim` with isotropic noise added, then L2-normalised. Uniform random vectors have no neighbourhoods at all, the
worst case for any compressed index and unlike text embeddings.
"""

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import faiss
import numpy as np

from indexing.vectorindex.faiss_index import FaissIndex, factory_for
from indexing.vectorindex.ivf import RECALL_K, build_from_shards, recall_at_k
from indexing.vectorindex.shards import read_shard, write_shard

LATENT = 64


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def latent_model(dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    projection = rng.standard_normal((LATENT, dim)).astype(np.float32) / np.sqrt(LATENT)
    centres = rng.standard_normal((4096, LATENT)).astype(np.float32)
    return projection, centres


def synthetic(n: int, dim: int, rng: np.random.Generator, projection: np.ndarray, centres: np.ndarray) -> np.ndarray:
    latent = centres[rng.integers(0, len(centres), n)] + 0.5 * rng.standard_normal((n, LATENT)).astype(np.float32)
    vectors = latent @ projection + 0.1 * rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def generate(args) -> dict:
    out = Path(args.out) / "shards"
    out.mkdir(parents=True, exist_ok=True)
    projection, centres = latent_model(args.dim, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    t0, paths = time.perf_counter(), []
    for start in range(0, args.n, args.shard_size):
        size = min(args.shard_size, args.n - start)
        path = out / f"{start // args.shard_size:05d}.parquet"
        write_shard(path, np.arange(start, start + size) + 1, synthetic(size, args.dim, rng, projection, centres))
        paths.append(str(path))
    # queries: new points from the same distribution, never in the corpus
    queries = synthetic(args.queries, args.dim, np.random.default_rng(args.seed + 2), projection, centres)
    np.save(Path(args.out) / "queries.npy", queries)
    return {"seconds": round(time.perf_counter() - t0, 1), "shards": len(paths), "peak_rss_mb": round(peak_rss_mb())}


def _latency(index: faiss.Index, queries: np.ndarray, k: int) -> dict:
    """Single-query latency (median, p95) over the queries, and batched throughput."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # one request, one thread: OpenMP's barrier costs more than it saves on 1 query
    times = []
    for q in queries:
        t0 = time.perf_counter()
        index.search(q[None, :], k)
        times.append(time.perf_counter() - t0)
    faiss.omp_set_num_threads(threads)
    t0 = time.perf_counter()
    index.search(queries, k)
    batch = time.perf_counter() - t0
    return {"median_ms": round(1000 * float(np.median(times)), 3),
            "p95_ms": round(1000 * float(np.percentile(times, 95)), 3), "batch_qps": round(len(queries) / batch, 1)}


def build(args) -> dict:
    paths = sorted((Path(args.out) / "shards").glob("*.parquet"))
    folder = Path(args.out) / "index"
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    index = build_from_shards(paths, dim=args.dim, factory=args.factory, workers=args.workers,
                              holdout=args.holdout, ondisk_dir=folder if args.ondisk else None,
                              log=lambda m: print(m, file=sys.stderr, flush=True))
    seconds = time.perf_counter() - t0
    files = index.save(folder)
    peak = peak_rss_mb()
    queries = np.load(Path(args.out) / "queries.npy")
    reloaded = FaissIndex.load(folder, {"factory": index.factory, **index.params})
    _, ids = reloaded.search(queries, RECALL_K)
    np.save(Path(args.out) / "ivf_ids.npy", ids)
    return {"factory": index.factory, "params": index.params, "build_seconds": round(seconds, 1),
            "peak_rss_mb": round(peak), "index_mb": round(sum(f.stat().st_size for f in files) / 2**20),
            "latency": _latency(reloaded.index, queries[:args.latency_queries], RECALL_K)}


def flat(args) -> dict:
    paths = sorted((Path(args.out) / "shards").glob("*.parquet"))
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(args.dim))
    for path in paths:
        ids, vectors = read_shard(path, dim=args.dim)
        index.add_with_ids(vectors, ids)
    queries = np.load(Path(args.out) / "queries.npy")
    _, exact = index.search(queries, RECALL_K)
    np.save(Path(args.out) / "flat_ids.npy", exact)
    return {"peak_rss_mb": round(peak_rss_mb()),
            "latency": _latency(index, queries[:args.latency_queries], RECALL_K)}


def _child(args, phase: str) -> dict:
    cmd = [sys.executable, __file__, phase, *sys.argv[1:]]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", nargs="?", choices=["all", "generate", "build", "flat"], default="all")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--shard-size", type=int, default=100_000)
    parser.add_argument("--factory", default=None, help="faiss factory string (default: factory_for(n, dim))")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--holdout", type=int, default=500, help="held-aside vectors for the recorded recall")
    parser.add_argument("--queries", type=int, default=1000, help="fresh queries for recall against flat")
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument("--ondisk", action="store_true", help="merge inverted lists into an mmapped file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reuse-shards", action="store_true", help="skip generate: the shards in --out exist")
    parser.add_argument("--out", default="/tmp/hindsight-sharded")
    parser.add_argument("--json", default=None, help="also write the result here")
    args = parser.parse_args()
    if args.phase != "all":
        print(json.dumps({"generate": generate, "build": build, "flat": flat}[args.phase](args)))
        return
    sys.argv = [a for a in sys.argv[1:] if a != "all"]
    sys.argv.insert(0, __file__)
    result = {"n": args.n, "dim": args.dim, "shard_size": args.shard_size,
              "factory": args.factory or factory_for(args.n, args.dim),
              "flat_vectors_mb": round(args.n * args.dim * 4 / 2**20)}
    for phase in ("build", "flat") if args.reuse_shards else ("generate", "build", "flat"):
        result[phase] = _child(args, phase)
        print(phase, json.dumps(result[phase]), file=sys.stderr, flush=True)
    ivf_ids, flat_ids = (np.load(Path(args.out) / f"{name}_ids.npy") for name in ("ivf", "flat"))
    result[f"recall_at_{RECALL_K}_fresh_queries"] = round(recall_at_k(ivf_ids, flat_ids), 4)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
