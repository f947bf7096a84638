"""Impact of a paper: h(p) = w_c * c_hat(p) + w_v * v(p)."""

import math
from collections.abc import Iterable, Sequence

from indexing.sources.dates import venue_key


def top_venue_keys(venues: Iterable[str]) -> set[str]:
    return {venue_key(v) for v in venues}


def is_top_venue(venue: str | None, top_keys: set[str]) -> bool:
    return bool(venue) and venue_key(venue) in top_keys


def normalised_citations(counts: Sequence[int | None], transform: str = "none") -> tuple[list[float], float, float]:
    """Min-max normalised counts (missing counts as 0); returns (c_hat, min, max) of the transformed counts.

    When min == max every c_hat is 0: no paper stands out by citations.
    """
    values = [float(c or 0) for c in counts]
    if transform == "log1p":
        values = [math.log1p(v) for v in values]
    if not values:
        return [], 0.0, 0.0
    lo, hi = min(values), max(values)
    if hi == lo:
        return [0.0] * len(values), lo, hi
    return [(v - lo) / (hi - lo) for v in values], lo, hi


def impact(c_hat: float, top_venue: bool, *, citation_weight: float = 0.6, venue_weight: float = 0.4) -> float:
    return citation_weight * c_hat + venue_weight * (1.0 if top_venue else 0.0)
