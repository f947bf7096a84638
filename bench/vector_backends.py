"""Vector backends side by side: FAISS flat, IVF-SQ8, IVF-PQ + exact float16 re-rank, Qdrant local mode.

    nice -n 10 .venv/bin/python bench/vector_backends.py --sizes 100000 1000000 2000000 --qdrant-max 100000 \\
        --out /tmp/hs-vector-backends --json bench/results/vector_backends.json

One set of synthetic 768-d shards (bench/sharded_build.py's clustered vectors, ids 0..n-1) serves every size: size
n uses the first n vectors. Per size and backend, each build and its queries run in their own process so the peak
RSS (ru_maxrss) is that backend's: build time, recall@20 of fresh queries against the exact answer (computed shard
by shard), single-query latency p50/p99 on one thread, bytes a vector on disk and in RAM. Flat is measured up to
--flat-max (its float32 matrix must fit beside the rest of the machine's work); SQ8 up to --sq8-max.
The machine is shared: latencies and build times are of a loaded machine (the load average is printed).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sharded_build import latent_model, synthetic  # noqa: E402
from indexing.vectorindex.faiss_index import FaissIndex, nlist_for, pq_m  # noqa: E402
from indexing.vectorindex.ivf import RECALL_K, build_from_shards, exact_topk, merge_topk, recall_at_k  # noqa: E402
from indexing.vectorindex.shards import iter_shard, write_shard  # noqa: E402

SHARD = 100_000


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def shard_paths(out: Path, n: int) -> list[Path]:
    return sorted((out / "shards").glob("*.parquet"))[:max(1, n // SHARD)]


def generate(args) -> dict:
    wanted = [args.out / "shards" / f"{i:05d}.parquet" for i in range(max(args.sizes) // SHARD)]
    if all(p.exists() for p in wanted) and (args.out / "queries.npy").exists():
        return {"seconds": 0.0, "reused": True}  # the same seed wrote them: a later run measures the same data
    (args.out / "shards").mkdir(parents=True, exist_ok=True)
    projection, centres = latent_model(args.dim, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    t0 = time.perf_counter()
    for start in range(0, max(args.sizes), SHARD):
        path = args.out / "shards" / f"{start // SHARD:05d}.parquet"
        vectors = synthetic(SHARD, args.dim, rng, projection, centres)
        if not path.exists():
            write_shard(path, np.arange(start, start + SHARD), vectors)
    queries = synthetic(args.queries, args.dim, np.random.default_rng(args.seed + 2), projection, centres)
    np.save(args.out / "queries.npy", queries)
    return {"seconds": round(time.perf_counter() - t0, 1)}


def truth(args) -> dict:
    """Exact top-20 of the queries at every size, one shard at a time."""
    if all((args.out / f"truth_{n}.npy").exists() for n in args.sizes):
        return {"reused": True}
    queries = np.load(args.out / "queries.npy")
    parts: list = []
    done = 0
    for path in shard_paths(args.out, max(args.sizes)):
        for ids, vectors in iter_shard(path, dim=args.dim):
            parts = [merge_topk([*parts, exact_topk(queries, vectors, ids, RECALL_K)], RECALL_K)]
            done += len(ids)
        if done in args.sizes:
            np.save(args.out / f"truth_{done}.npy", parts[0][1])
    return {}


def latency(search, queries: np.ndarray) -> dict:
    faiss.omp_set_num_threads(1)  # one request, one thread
    times = []
    for q in queries:
        t0 = time.perf_counter()
        search(q[None, :])
        times.append(time.perf_counter() - t0)
    return {"p50_ms": round(1000 * float(np.median(times)), 2),
            "p99_ms": round(1000 * float(np.percentile(times, 99)), 2)}


def measure(args, search, build_s: float, disk_bytes: int, extra: dict) -> dict:
    queries = np.load(args.out / "queries.npy")
    exact = np.load(args.out / f"truth_{args.n}.npy")
    found = np.vstack([search(queries[i:i + 100]) for i in range(0, len(queries), 100)])
    return {"build_s": round(build_s, 1), f"recall_at_{RECALL_K}": round(recall_at_k(found, exact), 4),
            **latency(search, queries[:args.latency_queries]), "disk_bytes_per_vector": round(disk_bytes / args.n, 1),
            "peak_rss_mb": round(peak_rss_mb()), **extra}


def flat(args) -> dict:
    t0 = time.perf_counter()
    matrix = np.empty((args.n, args.dim), dtype=np.float32)  # allocated once: IndexFlat.add would double it
    row = 0
    for path in shard_paths(args.out, args.n):
        for _, vectors in iter_shard(path, dim=args.dim):
            matrix[row:row + len(vectors)] = vectors
            row += len(vectors)
    build_s = time.perf_counter() - t0

    def search(q: np.ndarray) -> np.ndarray:
        return faiss.knn(q, matrix, RECALL_K, metric=faiss.METRIC_INNER_PRODUCT)[1]

    return measure(args, search, build_s, matrix.nbytes, {"ram_bytes_per_vector": args.dim * 4})


def ivf(args, codec: str) -> dict:
    folder = args.out / f"{codec}-{args.n}"
    folder.mkdir(parents=True, exist_ok=True)
    factory = f"IVF{nlist_for(args.n)}_HNSW32,{'SQ8' if codec == 'sq8' else f'PQ{pq_m(args.dim)}np'}"
    t0 = time.perf_counter()
    index = build_from_shards(shard_paths(args.out, args.n), dim=args.dim, factory=factory, workers=2,
                              ondisk_dir=folder if codec == "pq" else None,
                              rerank_dir=folder if codec == "pq" else None,
                              log=lambda m: print(m, file=sys.stderr, flush=True))
    build_s = time.perf_counter() - t0
    files = index.save(folder)
    spec = {"factory": factory, **json.loads(json.dumps(index.params))}  # as the manifest records it
    del index
    reopened = FaissIndex.load(folder, spec)

    def search(q: np.ndarray) -> np.ndarray:
        return reopened.search(q, RECALL_K)[1]

    disk = sum(f.stat().st_size for f in files)
    rerank = reopened.params.get("rerank") or {}
    codes = disk - (args.n * rerank.get("bytes_per_vector", 0))
    return measure(args, search, build_s, disk, {
        "factory": factory, "nprobe": reopened.params.get("nprobe"), "candidates": rerank.get("candidates"),
        "manifest_recall_at_20": reopened.params.get(f"recall_at_{RECALL_K}"),
        "codes_only_recall_at_20": reopened.params.get(f"recall_at_{RECALL_K}_codes_only"),
        "ram_bytes_per_vector": round(codes / args.n, 1) if codec == "sq8" else None})


def qdrant(args) -> dict:
    from indexing.vectorindex.qdrant import QdrantIndex, connect

    path = args.out / f"qdrant-{args.n}"
    subprocess.run(["rm", "-rf", str(path)], check=True)
    t0 = time.perf_counter()
    index = QdrantIndex.create(connect(path=path), args.dim, "bench", path=path)
    for p in shard_paths(args.out, args.n):
        for ids, vectors in iter_shard(p, dim=args.dim):
            index.add(vectors, ids)
    build_s = time.perf_counter() - t0

    def search(q: np.ndarray) -> np.ndarray:
        return index.search(q, RECALL_K)[1]

    disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return measure(args, search, build_s, disk, {})


def child(args, phase: str, n: int | None = None) -> dict:
    cmd = [sys.executable, __file__, "--phase", phase, "--out", str(args.out), "--dim", str(args.dim),
           "--queries", str(args.queries), "--latency-queries", str(args.latency_queries), "--seed", str(args.seed),
           "--sizes", *map(str, args.sizes), *(["--n", str(n)] if n else [])]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--flat-max", type=int, default=1_000_000)
    parser.add_argument("--sq8-max", type=int, default=1_000_000)
    parser.add_argument("--qdrant-max", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--latency-queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hs-vector-backends"))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--phase", default="all", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    phases = {"generate": generate, "truth": truth, "flat": flat, "sq8": lambda a: ivf(a, "sq8"),
              "pq": lambda a: ivf(a, "pq"), "qdrant": qdrant}
    if args.phase != "all":
        print(json.dumps(phases[args.phase](args)))
        return
    print(f"faiss {faiss.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()}", file=sys.stderr)
    rows = [{"phase": "generate", **child(args, "generate")}, {"phase": "truth", **child(args, "truth")}]
    for n in sorted(args.sizes):
        for kind, limit in (("flat", args.flat_max), ("sq8", args.sq8_max), ("pq", max(args.sizes)),
                            ("qdrant", args.qdrant_max)):
            if n <= limit:
                row = {"n": n, "backend": kind, **child(args, kind, n), "load_average": os.getloadavg()[0]}
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
    text = json.dumps(rows, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
