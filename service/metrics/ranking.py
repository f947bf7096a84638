"""Longest-increasing-subsequence match of a predicted ranking, and its chance level."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from fractions import Fraction
from functools import lru_cache
from math import factorial, prod


def lis_length(values: Sequence[int]) -> int:
    """Length of the longest strictly increasing subsequence (patience sorting, O(n log n))."""
    tails: list[int] = []
    for value in values:
        position = bisect_left(tails, value)
        if position == len(tails):
            tails.append(value)
        else:
            tails[position] = value
    return len(tails)


def lis_match(gold_order: Sequence[str], predicted_order: Sequence[str]) -> float:
    """LIS of the gold ranks read in predicted order, divided by the group size.

    `gold_order` and `predicted_order` list the same items, best first.
    """
    rank = {item: position for position, item in enumerate(gold_order)}
    return lis_length([rank[item] for item in predicted_order]) / len(gold_order)


def _partitions(n: int, largest: int | None = None) -> Iterator[tuple[int, ...]]:
    largest = n if largest is None else largest
    if n == 0:
        yield ()
        return
    for first in range(min(n, largest), 0, -1):
        for rest in _partitions(n - first, first):
            yield (first, *rest)


def _standard_tableaux(shape: tuple[int, ...]) -> int:
    """Number of standard Young tableaux of a shape (hook length formula)."""
    columns = [sum(1 for row in shape if row > j) for j in range(shape[0])] if shape else []
    hooks = prod(shape[i] - j + columns[j] - i - 1 for i in range(len(shape)) for j in range(shape[i]))
    return factorial(sum(shape)) // hooks


@lru_cache(maxsize=None)
def expected_lis(n: int) -> Fraction:
    """Exact E[LIS] of a uniformly random permutation of n items.

    By the RSK correspondence the permutations whose LIS is k number sum(f_lambda^2) over the shapes lambda of n
    with first row k, f_lambda being the number of standard Young tableaux of that shape.
    """
    if n < 1:
        raise ValueError("n must be at least 1")
    total = sum(shape[0] * _standard_tableaux(shape) ** 2 for shape in _partitions(n))
    return Fraction(total, factorial(n))


def lis_match_chance(n: int) -> float:
    """Expected LIS match (LIS / n) of a random ranking of n items."""
    return float(expected_lis(n) / n)
