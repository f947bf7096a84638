"""Date windows inside one built index, and the citation normalisation (c_hat) of each window.

A version built by this code orders its snapshot (papers.json) by (publication_date, pk) and gives each vector the
id of its position there, so any date window [cutoff, until] is one contiguous id range [lo, hi), found by
bisection on the dates. That range is the single restriction every retriever (dense and lexical) applies.
Versions built before (vector id = paper pk, snapshot in pk order) serve only their built window.
"""

import bisect
import re
import threading
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from indexing.errors import DomainError

DATE_ORDER = "date_order"  # manifest["vector_ids"]: vector id = position in papers.json, ordered by date then pk
CACHED_WINDOWS = 64  # per loaded version; each holds two float arrays of the window's size


class WindowError(DomainError, ValueError):
    """A requested window the version cannot serve; names the field and the range it allows. `status` is the HTTP
    answer: 409 when the index's contents decide (outside its built range, no paper in the window, which an end
    before its start also is), 422 when a value is not a date or a list of dates is malformed."""

    field: str

    def __init__(self, field: str, message: str, allowed: tuple[str, str], status: int = 409) -> None:
        super().__init__(message, field=field, status=status)
        self.allowed = allowed

    def detail(self) -> dict:
        return {"field": self.field, "message": str(self),
                "allowed": {"start": self.allowed[0], "end": self.allowed[1]}}


@dataclass(frozen=True)
class Window:
    """Inclusive publication dates and the id range [lo, hi) they cover."""

    start: date
    end: date
    lo: int
    hi: int

    @property
    def range(self) -> tuple[int, int]:
        return self.lo, self.hi

    @property
    def papers(self) -> int:
        return self.hi - self.lo

    def as_dict(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat()}


_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def iso_day(value: str | date) -> date:
    """Exactly YYYY-MM-DD, a real day; ValueError otherwise. The project's one day parser: date.fromisoformat
    alone also takes 20230601 and week dates (2023-W22-4), and strptime takes 2023-6-1."""
    if isinstance(value, date):
        return value
    if not isinstance(value, str) or not _DAY.fullmatch(value):
        raise ValueError("must be written YYYY-MM-DD")
    return date.fromisoformat(value)


def parse_day(value: str | date | None, *, field: str, allowed: tuple[str, str]) -> date | None:
    """A YYYY-MM-DD date, or a WindowError naming the field."""
    if value is None:
        return None
    try:
        return iso_day(value.strip() if isinstance(value, str) else value)
    except ValueError:
        raise WindowError(field, f"{str(value).strip()[:40]!a} is not a date (YYYY-MM-DD); the allowed range is "
                                 f"{allowed[0]}..{allowed[1]}", allowed, status=422) from None


def cohort_of(day: str) -> str:
    """The publication half-year of an ISO date: 2024H1 (January-June) or 2024H2."""
    return f"{day[:4]}H{1 if int(day[5:7]) <= 6 else 2}"


@dataclass
class WindowImpact:
    """c_hat and impact of the papers in one window (arrays indexed by position - lo), and what made them."""

    window: Window
    c_hat: np.ndarray
    impact: np.ndarray
    stats: dict

    def of(self, position: int) -> tuple[float, float]:
        i = position - self.window.lo
        return float(self.c_hat[i]), float(self.impact[i])


def normalise(values: np.ndarray, cohorts: np.ndarray | None) -> tuple[np.ndarray, dict]:
    """Min-max over the values (transformed citation counts), globally or within each cohort; min == max gives 0."""
    def minmax(v: np.ndarray) -> tuple[np.ndarray, float, float]:
        if v.size == 0:
            return v.astype(float), 0.0, 0.0
        lo, hi = float(v.min()), float(v.max())
        return (np.zeros_like(v) if hi == lo else (v - lo) / (hi - lo)), lo, hi

    if cohorts is None:
        c_hat, lo, hi = minmax(values)
        return c_hat, {"citation_min": lo, "citation_max": hi}
    c_hat = np.zeros_like(values)
    per: dict[str, dict] = {}
    for name in sorted(set(cohorts.tolist())):
        mask = cohorts == name
        c_hat[mask], lo, hi = minmax(values[mask])
        per[name] = {"citation_min": lo, "citation_max": hi, "papers": int(mask.sum())}
    overall = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    return c_hat, {"citation_min": overall[0], "citation_max": overall[1], "cohorts": per}


@dataclass
class PaperTable:
    """The columns of a snapshot that windows need, in snapshot order."""

    dates: list[str]
    values: np.ndarray  # transformed citation counts, missing as 0
    top: np.ndarray  # bool
    cohorts: np.ndarray  # half-year names
    transform: str
    normalisation: str
    citation_weight: float
    venue_weight: float
    _cache: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, rows: list[dict], *, transform: str = "none", normalisation: str = "global",
           citation_weight: float = 0.6, venue_weight: float = 0.4) -> "PaperTable":
        values = np.array([float(r.get("citations") or 0) for r in rows], dtype=np.float64)
        if transform == "log1p":
            values = np.log1p(values)
        dates = [str(r["publication_date"]) for r in rows]
        return cls(dates=dates, values=values, top=np.array([bool(r.get("top_venue")) for r in rows], dtype=bool),
                   cohorts=np.array([cohort_of(d) for d in dates], dtype=object), transform=transform,
                   normalisation=normalisation, citation_weight=citation_weight, venue_weight=venue_weight)

    def impacts(self, window: Window) -> WindowImpact:
        """c_hat and impact over the window; computed once per window, then served from the cache."""
        key = window.range
        found = self._cache.get(key)
        if found is not None:
            return found
        with self._lock:
            if key not in self._cache:
                lo, hi = key
                cohorts = self.cohorts[lo:hi] if self.normalisation == "cohort" else None
                c_hat, stats = normalise(self.values[lo:hi], cohorts)
                impact = self.citation_weight * c_hat + self.venue_weight * self.top[lo:hi].astype(np.float64)
                stats = {"citation_normalisation": self.normalisation, **stats, "papers": hi - lo}
                if len(self._cache) >= CACHED_WINDOWS:  # many distinct windows: forget the oldest
                    self._cache.pop(next(iter(self._cache)))
                self._cache[key] = WindowImpact(window, c_hat, impact, stats)
            return self._cache[key]

    @property
    def cached_windows(self) -> int:
        return len(self._cache)


def bisect_range(dates: list[str], start: date, end: date) -> tuple[int, int]:
    """Positions [lo, hi) of the sorted ISO dates inside [start, end] (both inclusive)."""
    return bisect.bisect_left(dates, start.isoformat()), bisect.bisect_right(dates, end.isoformat())


def resolve_window(*, built: tuple[str, str], dates: list[str], ordered: bool, version: str,
                   cutoff: str | date | None = None, until: str | date | None = None,
                   cutoff_field: str = "cutoff", until_field: str = "until") -> Window:
    """The window [cutoff, until] inside the built one (each defaults to the built edge), as an id range."""
    start = parse_day(cutoff, field=cutoff_field, allowed=built)
    end = parse_day(until, field=until_field, allowed=built)
    built_start, built_end = date.fromisoformat(built[0]), date.fromisoformat(built[1])
    start, end = start or built_start, end or built_end
    span = f"index {version} covers {built[0]}..{built[1]}"
    if start < built_start or start > built_end:
        raise WindowError(cutoff_field, f"{start} is outside the built range; {span}", built)
    if end < built_start or end > built_end:
        raise WindowError(until_field, f"{end} is outside the built range; {span}", built)
    if end < start:
        raise WindowError(until_field, f"{end} is before the cutoff {start}; {span}", built)
    if not ordered:
        if (start, end) != (built_start, built_end):
            raise WindowError(cutoff_field if start != built_start else until_field,
                              f"index {version} was built before per-request windows (its vector ids are not in "
                              f"date order), so it serves only its built window {built[0]}..{built[1]}; rebuild "
                              "with `hindsight index build` to score at other cutoffs", built)
        return Window(start, end, 0, len(dates))
    lo, hi = bisect_range(dates, start, end)
    if hi <= lo:
        raise WindowError(cutoff_field, f"no indexed paper was published in {start}..{end}; {span}", built)
    return Window(start, end, lo, hi)
