"""Counting an idea's tokens for the out-of-range warnings while other threads embed: the count must not touch the
tokenizer the embedder encodes with (a fast tokenizer's truncation state is shared, and switching it while another
thread encodes raises "Already borrowed")."""

from concurrent.futures import ThreadPoolExecutor

from indexing.matcher.facets import IdeaFacets
from indexing.matcher.ranges import token_counts

LONG = " ".join(f"word{i} sentence about retrieval and ranking." for i in range(120))


def test_token_counts_while_other_threads_encode(minilm):
    ideas = [IdeaFacets(LONG, LONG, LONG)] * 4

    def count(_: int) -> int:
        counts = token_counts(minilm, ideas)
        assert counts is not None
        return counts[0]["whole"]

    def encode(_: int) -> int:
        return len(minilm.encode([LONG, LONG[:200], LONG[:50]] * 4))

    with ThreadPoolExecutor(6) as pool:
        jobs = [pool.submit(count if i % 2 else encode, i) for i in range(60)]
        results = [j.result() for j in jobs]  # re-raises a RuntimeError from either side
    assert all(r > minilm.max_tokens for r in results[1::2])  # counted past the window, untruncated
