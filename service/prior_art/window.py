"""The look-back window of a request: [cutoff - lookback, cutoff), clipped to the index's built window, resolved by
the same window machinery as the forward side (one id range of the date-ordered version)."""

from dataclasses import dataclass, field
from datetime import date, timedelta

from indexing.versions import LoadedIndex
from indexing.windows import Window, WindowError

KNOWN, UNKNOWN = "known", "unknown"


@dataclass
class LookBack:
    """The window searched before the cutoff (None: none could be), what was asked, and why it differs."""

    lookback_days: int
    requested_start: date
    end: date  # the day before the cutoff
    window: Window | None
    clipped: bool
    built_start: date
    knowledge_cutoff: date | None = None
    warnings: list[dict] = field(default_factory=list)

    @property
    def status(self) -> str:
        return KNOWN if self.window is not None else UNKNOWN

    @property
    def papers(self) -> int:
        return self.window.papers if self.window is not None else 0

    def as_dict(self) -> dict:
        """The answer's `lookback_window` block."""
        return window_dict(start=self.window.start if self.window else None, end=self.end,
                           requested_start=self.requested_start, lookback_days=self.lookback_days,
                           clipped=self.clipped, papers=self.papers, status=self.status,
                           knowledge_cutoff=self.knowledge_cutoff)


def window_dict(*, start: date | None, end: date, requested_start: date, lookback_days: int, clipped: bool,
                papers: int, status: str, knowledge_cutoff: date | None) -> dict:
    """The answer's `lookback_window` block, of a live request's window or a stored one."""
    return {"start": start.isoformat() if start else None, "end": end.isoformat(),
            "requested_start": requested_start.isoformat(), "lookback_days": lookback_days, "clipped": clipped,
            "papers": papers, "status": status,
            "knowledge_cutoff": knowledge_cutoff.isoformat() if knowledge_cutoff else None}


def lookback_window(loaded: LoadedIndex, cutoff: date, days: int, *,
                    knowledge_cutoff: date | None = None) -> LookBack:
    """The look-back window of a request scored from `cutoff`: [cutoff - days, cutoff - 1 day] inside the built
    window; an index without papers there gives no window and a warning (a version built before per-request windows
    serves only its built window, so its cutoff is its start: nothing before)."""
    requested, end = cutoff - timedelta(days=days), cutoff - timedelta(days=1)
    built_start = date.fromisoformat(loaded.built_window[0])
    start = max(requested, built_start)
    out = LookBack(days, requested, end, None, start > requested, built_start, knowledge_cutoff)
    why = None
    if end < start:
        why = f"index {loaded.version} holds no paper before the cutoff {cutoff} (its window starts {built_start})"
    else:
        try:
            out.window = loaded.resolve_window(start, end)
        except WindowError:
            why = f"index {loaded.version} holds no paper published in {start}..{end}"
    if why:
        remedy = (f"build the index from an earlier date (`hindsight index build --cutoff {requested}`) to see the "
                  f"{days} days before the cutoff" if out.clipped else  # else it covers them: the store has none
                  "ingest papers published then and rebuild, or look back further (lookback_days, --lookback-days)")
        out.warnings.append({"code": "prior_art_unknown", "message": (
            f"{why}: every idea's prior-art class is unknown, not new; {remedy}")})
    elif out.clipped:
        out.warnings.append({"code": "prior_art_clipped", "message": (
            f"the look-back window asked for starts {requested} ({days} days before the cutoff), but index "
            f"{loaded.version} starts {built_start}: prior art is searched in {start}..{end} only")})
    return out
