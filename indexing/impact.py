"""Top-tier venues: v(p) of the impact h(p) = w_c * c_hat(p) + w_v * v(p) (computed per window in indexing.windows)."""

from collections.abc import Iterable

from indexing.sources.dates import venue_key


def top_venue_keys(venues: Iterable[str]) -> set[str]:
    return {venue_key(v) for v in venues}


def is_top_venue(venue: str | None, top_keys: set[str]) -> bool:
    return bool(venue) and venue_key(venue) in top_keys
