"""FAISS inner-product index over normalised vectors, keyed by the papers' stable integer ids."""

import math
import shutil
from pathlib import Path

import faiss
import numpy as np

FILENAME = "index.faiss"
IVFDATA = "index.ivfdata"  # on-disk inverted lists of an IVF index merged with ondisk=True

# Exact search while its vectors fit comfortably and a query scans them in milliseconds (see docs/scaling.md);
# SQ8 codes (dim bytes a vector) while they fit in RAM; PQ codes (dim/8 bytes) beyond.
FLAT_MAX = 200_000
SQ8_MAX = 2_000_000
HNSW_M = 32


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
    sel = faiss.IDSelectorRange(lo, hi, True)
    if not is_ivf(index):
        params = faiss.SearchParameters(sel=sel)
    else:
        ivf = faiss.extract_index_ivf(index)
        nprobe = min(ivf.nlist, math.ceil(ivf.nprobe * math.sqrt(ivf.ntotal / (hi - lo))))
        params = faiss.SearchParametersIVF(sel=sel, nprobe=nprobe)
        if isinstance(faiss.downcast_index(ivf.quantizer), faiss.IndexHNSW):
            params.quantizer_params = faiss.SearchParametersHNSW(efSearch=max(2 * nprobe, 16))
            params._quantizer_params = params.quantizer_params  # the SWIG struct does not own it
    params._sel = sel  # nor its selector: keep it alive as long as the parameters
    return params


class FaissIndex:
    def __init__(self, index: faiss.Index, factory: str, params: dict | None = None) -> None:
        self.index, self.factory = index, factory
        self.kind = f"faiss:{factory}"
        self.params: dict = params or {}  # search parameters and build facts, recorded in the manifest

    @classmethod
    def create(cls, dim: int, *, n_hint: int = 0, factory: str | None = None) -> "FaissIndex":
        factory = factory or factory_for(n_hint, dim)
        return cls(faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT), factory)

    @classmethod
    def load(cls, folder: Path, factory: str, params: dict | None = None) -> "FaissIndex":
        params = params or {}
        if params.get("ondisk"):
            # the file names the ivfdata path it was merged at; point it at this folder's copy
            index = faiss.read_index(str(folder / FILENAME), faiss.IO_FLAG_SKIP_IVF_DATA)
            lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(index).invlists)
            lists.filename = str(folder / IVFDATA)
            lists.read_only = True
            lists.do_mmap()
        else:
            index = faiss.read_index(str(folder / FILENAME))
        apply_search_params(index, params)
        return cls(index, factory, params)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                np.ascontiguousarray(ids, dtype=np.int64))

    def search(self, queries: np.ndarray, k: int,
               allowed: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (similarities, ids); allowed=(lo, hi) keeps only ids in [lo, hi) (exact for flat indexes)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if allowed is None:
            k = max(1, min(k, self.index.ntotal)) if self.index.ntotal else k
            return self.index.search(queries, k)
        lo, hi = max(0, int(allowed[0])), min(int(allowed[1]), int(self.index.ntotal))
        if hi <= lo:
            return (np.full((len(queries), k), -np.inf, dtype=np.float32),
                    np.full((len(queries), k), -1, dtype=np.int64))
        k = max(1, min(k, hi - lo))
        return self.index.search(queries, k, params=range_params(self.index, lo, hi))

    def save(self, folder: Path) -> list[Path]:
        path = folder / FILENAME
        files = [path]
        if self.params.get("ondisk"):
            lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(self.index).invlists)
            source = Path(lists.filename)
            if source != folder / IVFDATA:
                shutil.move(source, folder / IVFDATA)  # the open mmap follows the inode
                lists.filename = str(folder / IVFDATA)
            files.append(folder / IVFDATA)
        faiss.write_index(self.index, str(path))
        return files

    def __len__(self) -> int:
        return int(self.index.ntotal)
