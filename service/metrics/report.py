"""The report every metric function returns: values, n, prediction accounting, chance levels."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, Field

Compat = Literal["strict", "reference"]

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


class StrictBlock(BaseModel):
    """The project's numbers: every gold item in the denominator, failures counted wrong."""

    n: int = Field(description="gold items in the denominator")
    metrics: dict[str, float | None] = Field(description="metric values; None when undefined")


class ReferenceBlock(BaseModel):
    """The number the benchmark's own code would print on the same files, under its rules."""

    source: str = Field(description="the reference repository, file and function this block follows")
    rule: str = Field(description="how the reference drops, fills and parses, in one paragraph")
    n: int = Field(description="items in the reference's denominator")
    metrics: dict[str, float | None] = Field(description="metric values under the reference's own names; None "
                                                         "where the reference would print nan or fail")
    counts: dict[str, int] = Field(description="the counts that explain the gap to the strict block")
    counting: dict[str, str] = Field(default_factory=dict, description="what each count means")


class Report(BaseModel):
    """Result of one metric computation."""

    benchmark: str
    task: str
    compat: Compat = Field("strict", description="which block `n` and `metrics` repeat: strict (the default, "
                                                 "recommended) or reference (to reproduce a leaderboard)")
    n: int = Field(description="n of the block named by `compat`")
    metrics: dict[str, float | None] = Field(description="metrics of the block named by `compat`; None when "
                                                         "undefined (see notes)")
    strict: StrictBlock
    reference: ReferenceBlock
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
    reference: ReferenceBlock,
) -> Report:
    """Build a report, making sure the standard counts and their explanations are present."""
    all_counts = {key: 0 for key in STANDARD_COUNTS} | counts
    all_counting = dict(STANDARD_COUNTING) | (counting or {})
    clean = clean_metrics(metrics)
    return Report(benchmark=benchmark, task=task, compat="strict", n=n, metrics=clean,
                  strict=StrictBlock(n=n, metrics=clean), reference=reference, counts=all_counts,
                  counting=all_counting, chance=chance or {}, details=details or {}, notes=notes or [])


def clean_metrics(metrics: dict[str, Any]) -> dict[str, float | None]:
    """Floats, with None for undefined values (None, nan, inf): JSON has no nan."""
    clean: dict[str, float | None] = {}
    for key, value in metrics.items():
        number = None if value is None else float(value)
        clean[key] = number if number is not None and math.isfinite(number) else None
    return clean


def reference_block(*, source: str, rule: str, n: int, metrics: dict[str, Any], counts: dict[str, int],
                    counting: dict[str, str] | None = None) -> ReferenceBlock:
    return ReferenceBlock(source=source, rule=rule, n=n, metrics=clean_metrics(metrics), counts=counts,
                          counting=counting or {})


def with_compat(report: Report, compat: Compat) -> Report:
    """The report with `n` and `metrics` taken from the block `compat` names."""
    block = report.reference if compat == "reference" else report.strict
    return report.model_copy(update={"compat": compat, "n": block.n, "metrics": dict(block.metrics)})


def listed(ids: list[Any]) -> list[str]:
    """At most MAX_LISTED_IDS ids, as strings, for `details`."""
    return [str(value) for value in ids[:MAX_LISTED_IDS]]
