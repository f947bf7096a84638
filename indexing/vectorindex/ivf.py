"""IVF indexes for large corpora: trained on a sample, filled shard by shard, recall measured on a held-aside sample.

The raw float vectors are never all in memory: a build holds the training sample, the held-aside queries and at
most `workers` shards at a time; the index itself holds only compressed codes (SQ8 or PQ), in RAM or, with
`ondisk=True`, in an mmapped `index.ivfdata` file merged by faiss' on-disk inverted lists.
"""

import shutil
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import faiss
import numpy as np
import pyarrow as pa

from indexing.vectorindex.faiss_index import IVFDATA, FaissIndex, apply_search_params, factory_for, is_ivf
from indexing.vectorindex.rerank import CANDIDATES, DTYPE, FILENAME as RERANK_FILE, RerankStore
from indexing.vectorindex.shards import iter_shard, shard_rows

RECALL_K = 20
TARGET_RECALL = 0.95
NPROBES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
HOLDOUT = 500


def training_size(n: int, nlist: int, dim: int) -> int:
    """Enough points for k-means (about 40 per list) and for PQ codebooks, never the whole corpus."""
    return min(n, max(40 * nlist, 20_000))


def _ivf(index: faiss.Index) -> faiss.IndexIVF:
    return faiss.extract_index_ivf(index)


def exact_topk(queries: np.ndarray, vectors: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-k of queries against one block, as (sims, ids)."""
    k_eff = min(k, len(vectors))
    sims, rows = faiss.knn(np.ascontiguousarray(queries), np.ascontiguousarray(vectors), k_eff,
                           metric=faiss.METRIC_INNER_PRODUCT)
    return sims, ids[rows]


def merge_topk(parts: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    sims = np.concatenate([p[0] for p in parts], axis=1)
    ids = np.concatenate([p[1] for p in parts], axis=1)
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(sims, order, 1), np.take_along_axis(ids, order, 1)


def recall_at_k(found: np.ndarray, exact: np.ndarray, k: int = RECALL_K) -> float:
    """Mean share of the exact top-k ids that the approximate top-k also returns."""
    hits = [len(set(f[:k].tolist()) & set(e[:k].tolist()) - {-1}) for f, e in zip(found, exact)]
    return float(np.mean(hits) / min(k, exact.shape[1]))


def tune_nprobe(index: faiss.Index, queries: np.ndarray, exact_ids: np.ndarray, *, k: int = RECALL_K,
                target: float = TARGET_RECALL) -> dict:
    """The smallest nprobe whose recall@k reaches target (else the best tried), with the whole curve."""
    nlist = _ivf(index).nlist
    curve: dict[str, float] = {}
    chosen = None
    for nprobe in (p for p in NPROBES if p <= nlist):
        apply_search_params(index, {"nprobe": nprobe})
        _, ids = index.search(queries, k)
        curve[str(nprobe)] = round(recall_at_k(ids, exact_ids, k), 4)
        if curve[str(nprobe)] >= target:
            chosen = nprobe
            break
    if chosen is None:  # target unreachable with these codes: take the best recall, the smallest nprobe on ties
        chosen = int(max(curve, key=lambda p: (curve[p], -int(p))))
    apply_search_params(index, {"nprobe": chosen})
    return {"nprobe": chosen, f"recall_at_{k}": curve[str(chosen)], "recall_by_nprobe": curve,
            "recall_target": target}


def tune_rerank(index: FaissIndex, queries: np.ndarray, exact_ids: np.ndarray, *, k: int = RECALL_K,
                target: float = TARGET_RECALL) -> dict:
    """The smallest nprobe, then the fewest re-ranked candidates, whose recall@k after the exact re-rank reaches
    target (else the best tried); records the codes-only recall at that nprobe beside it."""
    assert index.rerank is not None
    nlist = _ivf(index.index).nlist
    curve: dict[str, float] = {}
    codes_only: dict[int, float] = {}
    chosen: tuple[int, int] | None = None
    for nprobe in (p for p in NPROBES if p <= nlist):
        apply_search_params(index.index, {"nprobe": nprobe})
        # FAISS ranks the same way for any k: the first c of the widest answer are the answer for c
        _, wide = index.index.search(queries, max(CANDIDATES))
        codes_only[nprobe] = round(recall_at_k(wide, exact_ids, k), 4)
        for c in CANDIDATES:
            _, ids = index.rerank.rerank(queries, wide[:, :c], k)
            curve[f"{nprobe}x{c}"] = round(recall_at_k(ids, exact_ids, k), 4)
            if curve[f"{nprobe}x{c}"] >= target:
                chosen = (nprobe, c)
                break
        if chosen:
            break
    if chosen is None:
        best = max(curve, key=lambda key: (curve[key], -int(key.split("x")[0]), -int(key.split("x")[1])))
        chosen = (int(best.split("x")[0]), int(best.split("x")[1]))
    nprobe, c = chosen
    apply_search_params(index.index, {"nprobe": nprobe})
    index.params["rerank"] = {"file": RERANK_FILE, "dtype": np.dtype(DTYPE).name, "candidates": c,
                              "bytes_per_vector": int(index.index.d * np.dtype(DTYPE).itemsize)}
    return {"nprobe": nprobe, f"recall_at_{k}": curve[f"{nprobe}x{c}"],
            f"recall_at_{k}_codes_only": codes_only[nprobe], "recall_by_nprobe_x_candidates": curve,
            "recall_target": target}


def _sample_rows(rows: list[int], train: int, holdout: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint global row numbers for training and for the held-aside recall queries."""
    n = sum(rows)
    holdout = min(holdout, max(1, n // 10))
    train = min(train, n - holdout)
    picked = np.random.default_rng(seed).choice(n, size=train + holdout, replace=False)
    return np.sort(picked[:train]), np.sort(picked[train:])


def _gather(paths: Sequence[Path], rows: list[int], wanted: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The vectors at the given global row numbers, reading one shard at a time."""
    out = np.empty((len(wanted), dim), dtype=np.float32)
    out_ids = np.empty(len(wanted), dtype=np.int64)
    start, filled = 0, 0
    for path, count in zip(paths, rows):
        if not np.any((wanted >= start) & (wanted < start + count)):
            start += count
            continue
        for ids, vectors in iter_shard(path, dim=dim):
            local = wanted[(wanted >= start) & (wanted < start + len(ids))] - start
            out[filled:filled + len(local)] = vectors[local]
            out_ids[filled:filled + len(local)] = ids[local]
            filled += len(local)
            start += len(ids)
    return out_ids, out


def build_from_shards(paths: Sequence[Path], *, dim: int, factory: str | None = None, workers: int = 2,
                      holdout: int = HOLDOUT, seed: int = 0, target_recall: float = TARGET_RECALL,
                      ondisk_dir: Path | None = None, rerank_dir: Path | None = None, log=None) -> FaissIndex:
    """Build an index from Parquet vector shards (see shards.py) without loading them all at once.

    ondisk_dir: merge the inverted lists into ondisk_dir/index.ivfdata (mmapped) instead of RAM.
    rerank_dir: also write float16 copies of the vectors there (rerank.py; shard ids must be 0..n-1) and tune
    nprobe and the candidates re-ranked to the target recall.
    """
    paths = [Path(p) for p in paths]
    rows = shard_rows(paths)
    n = sum(rows)
    if n == 0:
        raise ValueError("no vectors in the shards")
    factory = factory or factory_for(n, dim)
    say = log or (lambda msg: None)
    timings: dict[str, float] = {}
    index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    ivf = is_ivf(index)

    t0 = time.perf_counter()
    nlist = _ivf(index).nlist if ivf else 0
    train_rows, holdout_rows = _sample_rows(rows, training_size(n, nlist, dim) if ivf else 0, holdout, seed)
    _, train_vecs = _gather(paths, rows, train_rows, dim)
    _, queries = _gather(paths, rows, holdout_rows, dim)
    if ivf:
        say(f"training {factory} on {len(train_vecs)} of {n} vectors")
        index.train(train_vecs)
    del train_vecs
    template = faiss.clone_index(index)  # trained and empty: workers copy it, never the index being filled
    store = RerankStore.create(rerank_dir, n, dim) if rerank_dir is not None and ivf else None
    timings["train_s"] = round(time.perf_counter() - t0, 2)

    t0 = time.perf_counter()
    exact_parts: list[tuple[np.ndarray, np.ndarray]] = []
    tmp = Path(tempfile.mkdtemp(prefix="ivf-shards-", dir=ondisk_dir)) if ondisk_dir and ivf else None

    def fill(i: int) -> tuple[int, faiss.Index | Path, tuple[np.ndarray, np.ndarray]]:
        sub = faiss.clone_index(template)
        parts = []
        for ids, vectors in iter_shard(paths[i], dim=dim):
            sub.add_with_ids(vectors, ids)
            if store is not None:
                store.put(ids, vectors)
            parts.append(exact_topk(queries, vectors, ids, RECALL_K))
            parts = [merge_topk(parts, RECALL_K)]
        exact = parts[0]
        pa.default_memory_pool().release_unused()  # hand the decoded row groups back to the OS
        if tmp is None:
            return i, sub, exact
        faiss.write_index(sub, str(tmp / f"{i:06d}.index"))
        return i, tmp / f"{i:06d}.index", exact

    sub_files: list[Path] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        # a bounded window of shards in flight keeps memory at about `workers` shards
        pending = []
        for i in range(len(paths)):
            pending.append(pool.submit(fill, i))
            if len(pending) >= max(1, workers):
                _collect(pending.pop(0).result(), index, sub_files, exact_parts, say, len(paths))
        for fut in pending:
            _collect(fut.result(), index, sub_files, exact_parts, say, len(paths))
    if tmp is not None and ondisk_dir is not None:  # tmp is made only with an ondisk_dir
        from faiss.contrib.ondisk import merge_ondisk

        target = ondisk_dir / IVFDATA
        merge_ondisk(index, [str(p) for p in sub_files], str(target))
        shutil.rmtree(tmp, ignore_errors=True)
    timings["add_s"] = round(time.perf_counter() - t0, 2)

    _, exact_ids = merge_topk(exact_parts, RECALL_K)
    params: dict = {"ntotal": int(index.ntotal), "train_size": int(len(train_rows)), "holdout": int(len(queries)),
                    **timings}
    built = FaissIndex(index, factory, params, store)
    if ivf:
        params["nlist"] = int(nlist)
        if store is not None:
            store.flush()
            params.update(tune_rerank(built, queries, exact_ids, target=target_recall))
        else:
            params.update(tune_nprobe(index, queries, exact_ids, target=target_recall))
        if tmp is not None:
            params["ondisk"] = True
    else:
        _, found = index.search(queries, RECALL_K)
        params[f"recall_at_{RECALL_K}"] = round(recall_at_k(found, exact_ids), 4)
    return built


def _collect(result, index: faiss.Index, sub_files: list[Path], exact_parts: list, say, total: int) -> None:
    i, sub, exact = result
    exact_parts.append(exact)
    if isinstance(sub, Path):
        sub_files.append(sub)
    else:
        index.merge_from(sub, 0)
    say(f"shard {i + 1}/{total} added")


def build_in_memory(vectors: np.ndarray, ids: np.ndarray, *, factory: str | None = None,
                    holdout: int = HOLDOUT, seed: int = 0, target_recall: float = TARGET_RECALL,
                    rerank_dir: Path | None = None) -> FaissIndex:
    """The index for vectors already in memory: exact while small, else IVF trained on a sample with its recall.

    rerank_dir: for an IVF index, also a float16 re-rank store there (rerank.py; ids must be 0..n-1)."""
    n, dim = vectors.shape
    factory = factory or factory_for(n, dim)
    index = FaissIndex.create(dim, factory=factory)
    if not is_ivf(index.index):
        index.add(vectors, ids)
        return index
    nlist = _ivf(index.index).nlist
    train_rows, holdout_rows = _sample_rows([n], training_size(n, nlist, dim), holdout, seed)
    index.index.train(np.ascontiguousarray(vectors[train_rows], dtype=np.float32))
    index.add(vectors, ids)
    queries = np.ascontiguousarray(vectors[holdout_rows], dtype=np.float32)
    _, exact_ids = exact_topk(queries, np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids), RECALL_K)
    index.params = {"ntotal": n, "train_size": int(len(train_rows)), "holdout": int(len(queries)), "nlist": int(nlist)}
    if rerank_dir is not None:
        index.rerank = RerankStore.create(rerank_dir, n, dim)
        index.rerank.put(ids, vectors)
        index.rerank.flush()
        index.params.update(tune_rerank(index, queries, exact_ids, target=target_recall))
    else:
        index.params.update(tune_nprobe(index.index, queries, exact_ids, target=target_recall))
    return index

