"""Metrics of neighbouring benchmarks over inline gold and predictions (pure computation, nothing stored)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from service.errors import BODY, errors
from service.metrics import TASKS, Report, run_task, task_named
from service.metrics.report import Compat, with_compat

router = APIRouter(prefix="/v1/metrics", tags=["metrics"])
# the names the schema lists (a pair that is not a task, innoeval/u, is a 404); the lookup also takes any case
BENCHMARKS = sorted({benchmark for benchmark, _ in TASKS})
TASK_NAMES = sorted({task for _, task in TASKS})


class MetricsRequest(BaseModel):
    gold: list[dict[str, Any]] = Field(min_length=1, description="gold records, in the benchmark's own format "
                                                                 "(docs/metrics.md; 422 naming the item otherwise)")
    predictions: list[dict[str, Any]] = Field(min_length=1, description="prediction records, aligned with the gold "
                                                                        "by id")
    predictions_after: list[dict[str, Any]] | None = Field(None, min_length=1, description="second run (novelty "
                                                                                           "audit only)")
    seed: int = Field(0, description="bootstrap seed (novelty audit)")
    n_boot: int = Field(2000, ge=1, le=100_000, description="bootstrap resamples (novelty audit)")


class TaskInfo(BaseModel):
    benchmark: str
    task: str
    summary: str
    two_runs: bool


@router.get("", response_model=list[TaskInfo])
def list_tasks() -> list[TaskInfo]:
    """The benchmark tasks this service scores."""
    return [TaskInfo(benchmark=t.benchmark, task=t.name, summary=t.summary, two_runs=t.two_runs)
            for t in TASKS.values()]


@router.post("/{benchmark}/{task}", response_model=Report, responses=errors(*BODY, 404, 422))
def compute_metrics(benchmark: Annotated[str, Path(json_schema_extra={"enum": BENCHMARKS})],
                    task: Annotated[str, Path(json_schema_extra={"enum": TASK_NAMES})], body: MetricsRequest,
                    compat: Compat = Query("strict", description="strict (default, recommended) or reference: "
                                                                 "which block `n` and `metrics` repeat; both "
                                                                 "blocks are always in the answer")) -> Report:
    """Score predictions against gold for one benchmark task: the strict and the reference block."""
    report = run_task(task_named(benchmark, task), gold=body.gold, predictions=body.predictions,
                      predictions_after=body.predictions_after, seed=body.seed, n_boot=body.n_boot)
    return with_compat(report, compat)
