"""Index scale: exact flat vs IVF vs HNSW over synthetic 768-d normalised vectors.

    .venv/bin/python bench/index_scale.py                 # 10k and 100k
    .venv/bin/python bench/index_scale.py --full          # also 1M (about 3 GB of vectors; run it in the background)
    .venv/bin/python bench/index_scale.py --n 2000        # one size (smoke test)

For each size: build time, memory (serialised index bytes, and per paper), query latency in batches of 32 ideas
(one /v1/score request) and recall@20 against the exact flat search, for a sweep of nprobe (IVF) and efSearch (HNSW).
The baseline is the exact flat index measured in the same run; every ANN row prints its speed-up over it.
Vectors lie near a low-dimensional subspace, normalised, with cosine statistics close to real MiniLM paper
embeddings (uniform random vectors in 768-d have no near neighbours and make every ANN index look broken; tight
clusters make every ANN index look perfect); queries are fresh draws from the same distribution.
"""

import argparse
import gc
import json
import math
import os
import sys
import time

import faiss
import numpy as np

DIM = 768
K = 20
BATCH = 32


def synthetic(n: int, dim: int, *, seed: int, basis_seed: int = 0, latent: int = 24, offset: float = 0.45,
              noise: float = 0.5) -> np.ndarray:
    """n normalised vectors near a `latent`-dimensional subspace around a common offset direction.

    The shared basis (basis_seed) makes corpus and queries one distribution; the defaults put the cosines of random
    pairs at a median of about 0.15 (p99 0.46) and a point's nearest neighbour at about 0.65, close to what
    all-MiniLM-L6-v2 gives on real abstracts (null median 0.19, p99 0.50). Generated in chunks to bound memory.
    """
    basis = np.random.default_rng(basis_seed)
    mean = basis.standard_normal(dim).astype(np.float32)
    mean *= offset / np.linalg.norm(mean)
    directions = (basis.standard_normal((latent, dim)) / math.sqrt(dim)).astype(np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        chunk = (rng.standard_normal((m, latent), dtype=np.float32) / math.sqrt(latent)) @ directions
        chunk += mean
        chunk += rng.standard_normal((m, dim), dtype=np.float32) * (noise / math.sqrt(dim))
        chunk /= np.linalg.norm(chunk, axis=1, keepdims=True)
        out[start:start + m] = chunk
    return out


def index_bytes(index: faiss.Index) -> int:
    """Serialised size, counted through a callback writer (no copy of the index in memory)."""
    total = 0

    def count(chunk: bytes) -> int:
        nonlocal total
        total += len(chunk)
        return len(chunk)

    writer = faiss.PyCallbackIOWriter(count)
    faiss.write_index(index, writer)
    del writer
    return total


def timed_search(index: faiss.Index, queries: np.ndarray, repeats: int | None = None) -> tuple[np.ndarray, float]:
    """Search in batches of BATCH; returns (ids, ms per query), the best of `repeats` passes (the machine is
    shared, so the fastest pass is the least disturbed one)."""
    ids = np.empty((len(queries), K), dtype=np.int64)
    repeats = repeats or (3 if index.ntotal < 500_000 else 1)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for s in range(0, len(queries), BATCH):
            _, ids[s:s + BATCH] = index.search(queries[s:s + BATCH], K)
        times.append(time.perf_counter() - started)
    return ids, min(times) * 1000 / len(queries)


def recall_at_k(found: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(e)) / K for f, e in zip(found, exact)]))


def run_size(n: int, n_queries: int, seed: int) -> list[dict]:
    t0 = time.perf_counter()
    data = synthetic(n, DIM, seed=seed + 1)
    queries = synthetic(n_queries, DIM, seed=seed + 2)  # same distribution, fresh points
    print(f"\n== n={n:,} ({data.nbytes / 2**20:,.0f} MiB of vectors, generated in {time.perf_counter() - t0:.1f}s), "
          f"{n_queries} queries in batches of {BATCH}, k={K}", flush=True)
    rows = []

    def report(kind: str, params: str, build_s: float, nbytes: int, ms: float, recall: float, flat_ms: float) -> None:
        row = {"n": n, "index": kind, "params": params, "build_s": round(build_s, 2), "bytes": nbytes,
               "bytes_per_paper": round(nbytes / n, 1), "ms_per_query": round(ms, 4),
               "speedup_vs_flat": round(flat_ms / ms, 2), f"recall@{K}": round(recall, 4)}
        rows.append(row)
        print(f"{kind:<14} {params:<16} build {build_s:8.2f}s  mem {nbytes / 2**20:9.1f} MiB "
              f"({nbytes / n:7.0f} B/paper)  {ms:8.3f} ms/query  x{flat_ms / ms:6.2f} vs flat  "
              f"recall@{K} {recall:.4f}", flush=True)

    started = time.perf_counter()
    flat = faiss.IndexFlatIP(DIM)
    flat.add(data)
    flat_build = time.perf_counter() - started
    exact, flat_ms = timed_search(flat, queries)
    report("flat", "exact", flat_build, index_bytes(flat), flat_ms, 1.0, flat_ms)
    del flat
    gc.collect()

    def numpy_search(q: np.ndarray, k: int):  # the same exact search as a plain matrix product (a reference point)
        sims = q @ data.T
        top = np.argpartition(-sims, k, axis=1)[:, :k]
        return None, np.take_along_axis(top, np.argsort(-np.take_along_axis(sims, top, 1), 1), 1)

    class Numpy:
        ntotal = n
        search = staticmethod(numpy_search)

    found, ms = timed_search(Numpy, queries)
    report("numpy-exact", "matmul", 0.0, data.nbytes, ms, recall_at_k(found, exact), flat_ms)

    nlist = min(int(2 ** round(math.log2(4 * math.sqrt(n)))), max(1, n // 39))  # faiss wants >= 39 points per list
    started = time.perf_counter()
    quantizer = faiss.IndexFlatIP(DIM)
    ivf = faiss.IndexIVFFlat(quantizer, DIM, nlist, faiss.METRIC_INNER_PRODUCT)
    train = data[np.random.default_rng(seed).choice(n, min(n, 50 * nlist), replace=False)]
    ivf.train(train)
    ivf.add(data)
    ivf_build = time.perf_counter() - started
    ivf_bytes = index_bytes(ivf)
    for nprobe in (8, 16, 32, 64, 128, 256, 512):
        if nprobe > nlist:
            break
        ivf.nprobe = nprobe
        found, ms = timed_search(ivf, queries)
        report("ivf-flat", f"nlist={nlist} nprobe={nprobe}", ivf_build, ivf_bytes, ms, recall_at_k(found, exact),
               flat_ms)
    del ivf, quantizer
    gc.collect()

    started = time.perf_counter()
    hnsw = faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 40
    hnsw.add(data)
    hnsw_build = time.perf_counter() - started
    hnsw_bytes = index_bytes(hnsw)
    for ef in (16, 32, 64, 128, 256, 512):
        hnsw.hnsw.efSearch = ef
        found, ms = timed_search(hnsw, queries)
        report("hnsw32-flat", f"efSearch={ef}", hnsw_build, hnsw_bytes, ms, recall_at_k(found, exact), flat_ms)
    return rows


def best(rows: list[dict], n: int, kind: str, target: float = 0.95) -> dict | None:
    ok = [r for r in rows if r["n"] == n and r["index"] == kind and r[f"recall@{K}"] >= target]
    return max(ok, key=lambda r: r["speedup_vs_flat"]) if ok else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="*", help="corpus sizes (default 10000 100000)")
    parser.add_argument("--full", action="store_true", help="also 1,000,000 vectors (about 3 GB; tens of minutes)")
    parser.add_argument("--queries", type=int, default=320, help="query vectors per size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=str, help="also write the rows to this JSON file")
    args = parser.parse_args()
    sizes = args.n or [10_000, 100_000]
    if args.full and 1_000_000 not in sizes:
        sizes.append(1_000_000)
    print(f"faiss {faiss.__version__}, {faiss.omp_get_max_threads()} OpenMP threads, {os.cpu_count()} CPUs", flush=True)
    rows = []
    for n in sizes:
        rows += run_size(n, args.queries, args.seed)
    print("\nsummary: fastest setting with recall@20 >= 0.95, vs exact flat (goal at 1M: >= 5x)")
    for n in sizes:
        for kind in ("ivf-flat", "hnsw32-flat"):
            b = best(rows, n, kind)
            line = (f"{b['params']:<22} x{b['speedup_vs_flat']:.2f} recall {b['recall@20']:.4f} "
                    f"{b['bytes_per_paper']:.0f} B/paper") if b else "no setting reached 0.95"
            print(f"  n={n:>9,} {kind:<12} " + line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
