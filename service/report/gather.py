"""The report's figures, each from the function its `hindsight analyze ... --json` answer comes from, with the
sentence a section shows when it has nothing to show."""

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

import pandas as pd
from sqlalchemy.orm import Session

from service.analyses import AnalysisError, Selection, correlations, quadrant_points, quadrants, resolve_runs
from service.analyses import systems_summary
from service.analyses.selection import Conflict, NotFound, load_ideas
from service.report.provenance import provenance

SECTIONS = ("provenance", "systems", "comparison", "prior_art", "quadrants", "correlations", "distributions",
            "labels")
LIST_SIZE = 5  # ideas listed per quadrant


@dataclass(frozen=True)
class ReportRequest:
    """What to report: runs (ids or labels; all when empty), the judge, whether to add the estimates from labels, and
    the selection options `hindsight analyze` takes (group_by None: per system; scores of several windows, unpooled,
    are grouped per window)."""

    runs: tuple[str, ...] = ()
    judge: str | None = None
    labels: bool = False
    group_by: str | None = None
    cutoff: str | None = None
    until: str | None = None
    pool_windows: bool = False
    level: str = "realised"
    dimension: str = "overall"
    confidence: float = 0.95
    predictor: str = "decision"
    annotator: str | None = None
    n_resamples: int = 2000
    seed: int = 0


@dataclass
class Report:
    """The gathered figures: each analysis's answer as its command's --json gives it (None when it has none), the
    frames the plots draw, and per empty section the sentence saying why."""

    request: ReportRequest
    selection: Selection
    generated: str
    provenance: dict
    systems: dict | None = None
    correlations: dict | None = None
    quadrants: dict | None = None
    labels: dict | None = None
    ideas: pd.DataFrame | None = None
    quadrant_frame: pd.DataFrame | None = None
    why: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _sentence(message: str) -> str:
    text = message.strip()
    return (text[:1].upper() + text[1:]).rstrip(".") + "."


def _systems(session: Session, request: ReportRequest, selection: Selection) -> tuple[Selection, dict, list[str]]:
    """systems_summary; runs scored in several windows are grouped per window unless pooled, as the dashboard does."""
    options: dict[str, Any] = dict(n_resamples=request.n_resamples, seed=request.seed,
                                   confidence=request.confidence)
    try:
        return selection, systems_summary(session, selection=selection, **options), []
    except Conflict as exc:
        if exc.field != "pool_windows":
            raise
    selection = replace(selection, group_by="window")
    answer = systems_summary(session, selection=selection, **options)
    windows = ", ".join(w["window"] for w in answer["windows"])
    return selection, answer, [f"The selected runs were scored in {len(answer['windows'])} windows ({windows}), so "
                               "their ideas are grouped per system and window: a score at one cutoff counts matches "
                               "among other papers than a score at another."]


def _judge_reason(exc: AnalysisError, what: str) -> str:
    if isinstance(exc, NotFound) and exc.field == "judge":
        return (f"No judge scored the selected ideas, so there are no {what}: import a judge's scores "
                "(`hindsight judge import FILE`) or rate the runs (`hindsight judge run`).")
    if isinstance(exc, Conflict) and exc.field == "judge":
        chosen = f"the {what} are drawn for one judge, chosen when the report is made"
        return _sentence(exc.message.replace("choose one", chosen))
    return _sentence(f"There are no {what}: {exc.message}")


def _quadrants(session: Session, report: Report) -> None:
    request, selection = report.request, report.selection
    options: dict[str, Any] = dict(selection=selection, judge=request.judge, dimension=request.dimension)
    try:
        points = quadrant_points(session, **options)  # the points the plot draws; the answer is made from them
        report.quadrants = quadrants(session, **options, page_size=LIST_SIZE, points=points)
    except AnalysisError as exc:
        report.why["quadrants"] = _judge_reason(exc, "quadrants")
        return
    report.quadrant_frame = points[0]


def _correlations(session: Session, report: Report) -> None:
    judge = report.request.judge or (report.quadrants or {}).get("judge")
    answer = correlations(session, selection=report.selection, judge=judge)
    if answer["rows"]:
        report.correlations = answer
    else:
        report.why["correlations"] = (
            f"Judge {judge} scored none of the selected ideas, so there are no correlations." if judge else
            "No judge scored the selected ideas, so there are no correlations with a judge: import a judge's scores "
            "(`hindsight judge import FILE`) or rate the runs (`hindsight judge run`).")


def _labels(session: Session, settings: Any, report: Report) -> None:
    request = report.request
    if not request.labels:
        report.why["labels"] = "Estimates from labels were not asked for when this report was made."
        return
    from service.labels.estimates import labelled_summary  # numpy-heavy and only for this section

    try:
        answer = labelled_summary(session, selection=report.selection, confidence=request.confidence,
                                  predictor=request.predictor, annotator=request.annotator,
                                  shown=settings.labels.labels_top_k, indexes_dir=settings.indexes_dir)
    except AnalysisError as exc:
        report.why["labels"] = _sentence(f"There are no estimates from labels: {exc.message}")
        return
    if answer["annotator"] is None:
        report.why["labels"] = ("Nobody has labelled ideas of these runs yet, so there are no estimates from labels: "
                                "draw ideas at random (`hindsight label draw`) and label them in the dashboard.")
        return
    report.labels = answer


def _empty_reasons(report: Report) -> None:
    systems = report.systems or {}
    groups = systems.get("groups") or []
    if not groups:
        for key in ("systems", "comparison", "prior_art", "distributions"):
            report.why.setdefault(key, "The selected runs hold no scored idea.")
        return
    if len(groups) < 2:
        report.why.setdefault("comparison", f"There is one group ({groups[0]['group']}): a comparison needs two.")
    if not systems.get("prior_art"):
        report.why.setdefault("prior_art", "None of the selected ideas was scored with prior art (the look-back "
                                           "window before the cutoff), so there are no prior-art classes.")


def gather(session: Session, settings: Any, request: ReportRequest) -> Report:
    """Every figure of the report; AnalysisError when the selection itself is wrong (an unknown run, a bad date)."""
    ids = resolve_runs(session, list(request.runs))
    selection = Selection(runs=ids, group_by=request.group_by or "system", cutoff=request.cutoff,
                          until=request.until, pool_windows=request.pool_windows, level=request.level)
    selection, systems, notes = _systems(session, request, selection)
    ideas = load_ideas(session, selection)
    prior_windows = sorted({w for g in systems["groups"] if g.get("prior_art")
                            for w in g["prior_art"]["lookback_windows"]})
    report = Report(
        request=request, selection=selection, generated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        provenance=provenance(session, settings, run_ids=list(ids), scoring=systems["scoring"],
                              score_ids=[int(i) for i in ideas["score_id"]], windows=systems["windows"],
                              leak_risk=systems["leak_risk"], prior_art_windows=prior_windows),
        systems=systems, ideas=ideas, notes=notes)
    _empty_reasons(report)
    if not ideas.empty:
        _quadrants(session, report)
        _correlations(session, report)
    else:
        report.why.setdefault("quadrants", "The selected runs hold no scored idea.")
        report.why.setdefault("correlations", "The selected runs hold no scored idea.")
    _labels(session, settings, report)
    return report
