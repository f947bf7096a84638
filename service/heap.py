"""Keeping Python's cycle collector off the request path.

A loaded version and the model are hundreds of thousands of long-lived objects (620,000 tracked with 1,211 papers
and MiniLM): every full collection walks them all, 370 ms on the benchmark machine, and one comes every ~150
scoring requests, so it was the tail of one-idea latency. Frozen objects are never walked; they are still freed by
reference counting, and a replaced version's reference cycles are collected once when the heap is settled again.
"""

import gc


def settle() -> None:
    """Collect what is garbage now (a replaced version included), then freeze everything alive."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
