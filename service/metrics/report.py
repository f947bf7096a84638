"""The report every metric function returns: values, n, prediction accounting, chance levels."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

# Counts every report carries, whatever the task; tasks add their own beside them.
STANDARD_COUNTS = ("missing", "invalid", "duplicate", "duplicate_conflicting", "unknown_id")

STANDARD_COUNTING = {
    "missing": "gold item with no prediction: counted wrong, kept in the denominator "
               "(never filled with the gold answer)",
    "invalid": "prediction present but unparsable or outside the allowed values: counted wrong, "
               "kept in the denominator",
    "duplicate": "gold item predicted more than once: scored once when every copy gives the same answer, "
                 "otherwise counted wrong (duplicate_conflicting); no copy is ever chosen over another",
    "duplicate_conflicting": "gold item predicted more than once with different answers: counted wrong",
    "unknown_id": "prediction whose id is not in the gold: ignored for the metrics, reported here",
}

# Cap on id lists in `details`, so a report over a large benchmark stays readable.
MAX_LISTED_IDS = 50


class Report(BaseModel):
    """Result of one metric computation."""

    benchmark: str
    task: str
    n: int = Field(description="gold items in the denominator of the main metrics")
    metrics: dict[str, float | None] = Field(description="metric values; None when undefined (see notes)")
    counts: dict[str, int] = Field(description="missing, invalid, duplicate and unknown-id predictions, "
                                               "plus task counts")
    counting: dict[str, str] = Field(description="how each count and metric was counted")
    chance: dict[str, float] = Field(default_factory=dict, description="chance level of a metric, where defined")
    details: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


def make_report(
    *,
    benchmark: str,
    task: str,
    n: int,
    metrics: dict[str, float | None],
    counts: dict[str, int],
    counting: dict[str, str] | None = None,
    chance: dict[str, float] | None = None,
    details: dict[str, Any] | None = None,
    notes: list[str] | None = None,
) -> Report:
    """Build a report, making sure the standard counts and their explanations are present."""
    all_counts = {key: 0 for key in STANDARD_COUNTS} | counts
    all_counting = dict(STANDARD_COUNTING) | (counting or {})
    clean = {key: (None if value is None else float(value)) for key, value in metrics.items()}
    return Report(benchmark=benchmark, task=task, n=n, metrics=clean, counts=all_counts,
                  counting=all_counting, chance=chance or {}, details=details or {}, notes=notes or [])


def listed(ids: list[Any]) -> list[str]:
    """At most MAX_LISTED_IDS ids, as strings, for `details`."""
    return [str(value) for value in ids[:MAX_LISTED_IDS]]
