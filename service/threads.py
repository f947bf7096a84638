"""The server's intra-op threads: how many threads one request's encode (torch) and matrix work (numpy's BLAS) use.

A request scores a few ideas: its matrices are small (3 texts of ~50 tokens, a 100 x 384 candidate block), and a
second thread mostly waits at the library's barrier for its partner. On a shared 2-core machine that wait is the
tail (docs/benchmarks.md): the server gets its parallelism from concurrent requests instead. FAISS's small
searches run on one thread per call already (indexing.vectorindex.faiss_index.FEW_QUERIES).
"""


def apply_scoring_threads(n: int) -> None:
    """Set torch's intra-op threads and numpy's BLAS threads to n (0: leave the libraries' defaults)."""
    if n <= 0:
        return
    import torch
    from threadpoolctl import ThreadpoolController

    torch.set_num_threads(n)
    ThreadpoolController().select(user_api="blas", prefix="libscipy_openblas").limit(limits=n, user_api="blas")
