"""What the current index version holds: papers per month in its window, venues, share with known citations."""

from collections import Counter
from datetime import date

from indexing.versions import LoadedIndex


def months(start: date, end: date) -> list[str]:
    out, year, month = [], start.year, start.month
    while (year, month) <= (end.year, end.month):
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


def corpus_summary(loaded: LoadedIndex, *, top_venues: int = 12) -> dict:
    """Counts over the version's papers (its snapshot, the papers a score can match)."""
    rows = loaded.rows
    window = loaded.manifest["window"]
    per_month = Counter(str(r["publication_date"])[:7] for r in rows)
    venues = Counter(r["venue"] or "(none)" for r in rows)
    known = sum(not r.get("citations_missing", r.get("citations") is None) for r in rows)
    shown = venues.most_common(top_venues)
    return {
        "index_version": loaded.version, "model": loaded.manifest["model"], "window": window, "papers": len(rows),
        "per_month": [{"month": m, "papers": per_month.get(m, 0)}
                      for m in months(date.fromisoformat(window["start"]), date.fromisoformat(window["end"]))],
        "venues": [{"venue": v, "papers": n} for v, n in shown],
        "other_venues": {"venues": len(venues) - len(shown), "papers": len(rows) - sum(n for _, n in shown)},
        "citations": {"known": known, "missing": len(rows) - known,
                      "share_known": known / len(rows) if rows else None},
        "top_venue_papers": sum(bool(r.get("top_venue")) for r in rows),
    }
