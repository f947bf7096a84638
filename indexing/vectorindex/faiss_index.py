"""FAISS inner-product index over normalised vectors, keyed by the papers' stable integer ids."""

import math
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import faiss
import numpy as np

from indexing.vectorindex.base import Allowed
from indexing.vectorindex.rerank import RerankStore

FILENAME = "index.faiss"
IVFDATA = "index.ivfdata"  # on-disk inverted lists of an IVF index merged with ondisk=True

# Exact search while its vectors fit comfortably and a query scans them in milliseconds (see docs/scaling.md);
# SQ8 codes (dim bytes a vector) while they fit in RAM; PQ codes (dim/8 bytes) beyond.
FLAT_MAX = 200_000
SQ8_MAX = 2_000_000
HNSW_M = 32
# Fewer queries than FAISS's BLAS threshold are scanned one query per OpenMP thread: a one-idea request leaves the
# second thread idle at the barrier, which costs more than the scan (0.13 vs 40 ms for 2 queries over 1,211 papers
# on a loaded 2-core machine, docs/benchmarks.md). Concurrent requests still use every core, one each.
FEW_QUERIES = 20


def nlist_for(n: int) -> int:
    """About sqrt(n) inverted lists, as a power of two: one list holds about sqrt(n) codes."""
    return 2 ** max(4, round(math.log2(max(1.0, math.sqrt(n)))))


def pq_m(dim: int) -> int:
    """PQ sub-quantizers: one byte per 8 dimensions (96 bytes for 768-d, 48 for 384-d)."""
    return max(1, dim // 8)


def factory_for(n: int, dim: int) -> str:
    """Flat while small; IVF with an HNSW coarse quantizer and SQ8 or PQ codes beyond."""
    if n <= FLAT_MAX:
        return "IDMap2,Flat"
    # "np": no polysemous training, which costs minutes and serves only Hamming-filtered search we do not use
    codec = "SQ8" if n <= SQ8_MAX else f"PQ{pq_m(dim)}np"
    return f"IVF{nlist_for(n)}_HNSW{HNSW_M},{codec}"


@contextmanager
def omp_threads(n: int | None) -> Iterator[None]:
    """FAISS's OpenMP threads for the calling thread only (libgomp keeps the count per thread, so concurrent
    requests and builds keep theirs); None leaves it as it is."""
    if n is None:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def is_ivf(index: faiss.Index) -> bool:
    try:
        faiss.extract_index_ivf(index)
    except RuntimeError:
        return False
    return True


def apply_search_params(index: faiss.Index, params: dict) -> None:
    """Set nprobe (and a coarse-quantizer efSearch that can return that many lists) on an IVF index."""
    if "nprobe" not in params or not is_ivf(index):
        return
    ivf = faiss.extract_index_ivf(index)
    ivf.nprobe = int(params["nprobe"])
    quantizer = faiss.downcast_index(ivf.quantizer)
    if isinstance(quantizer, faiss.IndexHNSW):
        quantizer.hnsw.efSearch = max(int(params.get("ef_search", 0)), 2 * ivf.nprobe, 16)


def range_params(index: faiss.Index, lo: int, hi: int) -> faiss.SearchParameters:
    """Search parameters keeping ids in [lo, hi).

    IVF: ids are added in ascending order, so each inverted list is sorted and the selector cuts each list by
    bisection (assume_sorted). A narrow window's nearest papers lie farther out, across more lists: nprobe grows by
    1/sqrt(share of the corpus in the range), capped at nlist, which keeps recall@20 at or above the unfiltered one
    while scanning fewer codes than an unfiltered search (bench/filtered_search.py measures both).
    """
    # faiss's SearchParameters wrapper keeps the selector and quantizer parameters assigned to it alive
    params: faiss.SearchParameters
    if not is_ivf(index):
        params = faiss.SearchParameters()
    else:
        ivf = faiss.extract_index_ivf(index)
        nprobe = min(ivf.nlist, math.ceil(ivf.nprobe * math.sqrt(ivf.ntotal / (hi - lo))))
        params = ivf_params = faiss.SearchParametersIVF()
        ivf_params.nprobe = nprobe
        if isinstance(faiss.downcast_index(ivf.quantizer), faiss.IndexHNSW):
            hnsw = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # missing from faiss's stubs
            hnsw.efSearch = max(2 * nprobe, 16)
            ivf_params.quantizer_params = hnsw
    params.sel = faiss.IDSelectorRange(lo, hi, True)
    return params


def ivf_lists(ivf: faiss.IndexIVF) -> faiss.InvertedLists:
    """The inverted lists of an IVF index, as their own class."""
    if ivf.invlists is None:
        raise ValueError("the IVF index has no inverted lists")
    return faiss.downcast_InvertedLists(ivf.invlists)


def ondisk_lists(index: faiss.Index, where: Path) -> faiss.OnDiskInvertedLists:
    """The on-disk inverted lists of the IVF index stored at where."""
    lists = ivf_lists(faiss.extract_index_ivf(index))
    if not isinstance(lists, faiss.OnDiskInvertedLists):
        raise ValueError(f"{where}: the manifest says ondisk, but the index holds {type(lists).__name__}")
    return lists


class FaissIndex:
    """A FAISS index (flat or IVF, optionally with an exact re-rank store) in its version folder; published by the
    CURRENT pointer, nothing else."""

    def __init__(self, index: faiss.Index, factory: str, params: dict | None = None,
                 rerank: RerankStore | None = None) -> None:
        self.index, self.factory, self.rerank = index, factory, rerank
        self.kind = f"faiss:{factory}"
        self.params: dict = params or {}  # search parameters and build facts, recorded in the manifest
        self._reconstructs: bool | None = None  # whether stored vectors can be read back, found on first use
        self._lock = threading.Lock()  # an IVF direct map is built once, whichever request comes first

    @classmethod
    def create(cls, dim: int, *, n_hint: int = 0, factory: str | None = None) -> "FaissIndex":
        factory = factory or factory_for(n_hint, dim)
        return cls(faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT), factory)

    @classmethod
    def load(cls, folder: Path, spec: dict) -> "FaissIndex":
        """Open folder's index; spec is the manifest's `index` block (its factory and search parameters)."""
        params = {k: v for k, v in spec.items() if k not in ("kind", "factory", "metric")}
        if params.get("ondisk"):
            # the file names the ivfdata path it was merged at; point it at this folder's copy
            index = faiss.read_index(str(folder / FILENAME), faiss.IO_FLAG_SKIP_IVF_DATA)
            lists = ondisk_lists(index, folder / FILENAME)
            lists.filename = str(folder / IVFDATA)
            lists.read_only = True
            lists.do_mmap()
        else:
            index = faiss.read_index(str(folder / FILENAME))
        apply_search_params(index, params)
        return cls(index, spec["factory"], params, RerankStore.open(folder) if params.get("rerank") else None)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                np.ascontiguousarray(ids, dtype=np.int64))
        self._reconstructs = None

    def search(self, queries: np.ndarray, k: int, allowed: Allowed = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (similarities, ids); allowed=(lo, hi) keeps only ids in [lo, hi) (exact for flat indexes). With a
        re-rank store, the codes pick the candidates and the stored vectors score them."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        with omp_threads(1 if len(queries) < FEW_QUERIES else None):
            if self.rerank is None:
                sims, ids = self._search_codes(queries, k, allowed)
                sims[ids < 0] = -np.inf  # FAISS fills missing slots with -FLT_MAX
                return sims, ids
            _, candidates = self._search_codes(queries, max(k, int(self.params["rerank"]["candidates"])), allowed)
        return self.rerank.rerank(queries, candidates, k)

    def _search_codes(self, queries: np.ndarray, k: int, allowed: Allowed) -> tuple[np.ndarray, np.ndarray]:
        if allowed is None:
            k = max(1, min(k, self.index.ntotal)) if self.index.ntotal else k
            return self.index.search(queries, k)
        lo, hi = max(0, int(allowed[0])), min(int(allowed[1]), int(self.index.ntotal))
        if hi <= lo:
            return (np.full((len(queries), k), -np.inf, dtype=np.float32),
                    np.full((len(queries), k), -1, dtype=np.int64))
        k = max(1, min(k, hi - lo))
        return self.index.search(queries, k, params=range_params(self.index, lo, hi))

    def vectors(self, ids: np.ndarray) -> np.ndarray | None:
        """Stored vectors by id (see VectorIndex.vectors): exact for flat indexes, decoded codes for IVF ones."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if self.rerank is not None:
            return self.rerank.get(ids)
        if not self._can_reconstruct():
            return None
        if len(ids) == 0:
            return np.empty((0, self.index.d), dtype=np.float32)
        try:
            return np.asarray(self.index.reconstruct_batch(ids), dtype=np.float32).reshape(len(ids), self.index.d)
        except RuntimeError:
            missing = [int(i) for i in ids if not self._stored(int(i))]
            raise KeyError(f"ids not in this index: {missing[:10]}") from None

    def _can_reconstruct(self) -> bool:
        if self._reconstructs is None:
            with self._lock:
                if self._reconstructs is None:
                    self._reconstructs = self._prepare_reconstruct()
        return self._reconstructs

    def _prepare_reconstruct(self) -> bool:
        """Give an IVF index its id -> list map (an array for ids 0..n-1, else a hash table), then read one
        stored vector back: a codec that cannot decode fails here, once."""
        probe = 0
        if is_ivf(self.index):
            ivf = faiss.extract_index_ivf(self.index)
            try:
                ivf.make_direct_map()
            except RuntimeError:  # ids are not 0..n-1
                ivf.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]  # not in the stubs
            lists = ivf_lists(ivf)
            probe = next((int(faiss.rev_swig_ptr(lists.get_ids(lst), 1)[0]) for lst in range(ivf.nlist)
                          if lists.list_size(lst)), 0)
        outer = faiss.downcast_index(self.index)
        if hasattr(outer, "id_map"):  # IDMap around IVF: the lists hold inner ids, callers pass outer ones
            probe = int(outer.id_map.at(0)) if outer.id_map.size() else 0
        if self.index.ntotal == 0:
            return True
        return self._stored(probe)

    def _stored(self, vector_id: int) -> bool:
        try:
            self.index.reconstruct(vector_id)
        except RuntimeError:
            return False
        return True

    def save(self, folder: Path) -> list[Path]:
        path = folder / FILENAME
        files = [path]
        if self.params.get("ondisk"):
            lists = ondisk_lists(self.index, path)
            source = Path(lists.filename)
            if source != folder / IVFDATA:
                shutil.move(source, folder / IVFDATA)  # the open mmap follows the inode
                lists.filename = str(folder / IVFDATA)
            files.append(folder / IVFDATA)
        if self.rerank is not None:
            files.append(self.rerank.move_to(folder))
        faiss.write_index(self.index, str(path))
        return files

    def publish(self, alias: str) -> str | None:
        """Nothing to flip: the CURRENT pointer publishes the version folder this index is saved in."""
        return None

    def describe(self) -> dict:
        return {"kind": self.kind, "vectors": len(self)}

    def close(self) -> None:
        """In-process: nothing to release."""

    def __len__(self) -> int:
        return int(self.index.ntotal)
