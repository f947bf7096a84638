"""Metrics of neighbouring benchmarks: plain functions over gold labels and predictions, and their registry."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from indexing.errors import NotFoundError
from service.metrics import innoeval, novelty, reviewmt, siqa
from service.metrics.parsing import MetricsInputError
from service.metrics.report import Report

__all__ = ["TASKS", "MetricsInputError", "Report", "Task", "get_task", "run_task"]


@dataclass(frozen=True)
class Task:
    """One benchmark task: its metric function and whether it compares two prediction runs."""

    benchmark: str
    name: str
    score: Callable[..., Report]
    summary: str
    two_runs: bool = False


TASKS: dict[tuple[str, str], Task] = {
    (task.benchmark, task.name): task
    for task in (
        Task("innoeval", "points", innoeval.score_points, "decision accuracy / macro-F1 (full, binary, ternary)"),
        Task("innoeval", "groups", innoeval.score_groups, "best selection, LIS match and exact order of rankings"),
        Task("innoeval", "pairs", innoeval.score_pairs, "pairwise accuracy, overall and by difficulty"),
        Task("siqa", "u", siqa.score_understanding, "multiple-choice accuracy overall and per question type"),
        Task("siqa", "s", siqa.score_scoring, "SRCC / PLCC of expected level per dimension"),
        Task("reviewmt", "review", reviewmt.score_reviews, "hit rates, score MAE, decision F1"),
        Task("novelty", "pairwise", novelty.score_pairwise, "pairwise accuracy (ties 0.5, strict, without ties)"),
        Task("novelty", "pointwise", novelty.score_pointwise, "novel / not novel accuracy and macro-F1"),
        Task("novelty", "audit", novelty.audit_pairwise, "two pairwise runs: accuracies, flip rate, bootstrap CI",
             two_runs=True),
    )
}


def get_task(benchmark: str, task: str) -> Task | None:
    return TASKS.get((benchmark.lower(), task.lower()))


def task_named(benchmark: str, task: str) -> Task:
    """The task by its names (any case); 404 naming the known ones otherwise."""
    spec = get_task(benchmark, task)
    if spec is None:
        known = ", ".join(f"{b}/{t}" for b, t in TASKS)
        raise NotFoundError(f"unknown metrics task {benchmark}/{task}; known: {known}")
    return spec


def run_task(task: Task, *, gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]],
             predictions_after: Sequence[Mapping[str, Any]] | None = None, seed: int = 0,
             n_boot: int = 2000) -> Report:
    """Run a task's metric function with the arguments it takes."""
    if not task.two_runs:
        return task.score(gold, predictions)
    if predictions_after is None:
        raise MetricsInputError("required: the audit compares two runs", source="predictions_after")
    return task.score(gold, predictions, predictions_after=predictions_after, seed=seed, n_boot=n_boot)
