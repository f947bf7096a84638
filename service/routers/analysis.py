"""Analyses: system summary and comparison, correlations, quadrants, their plots and CSV exports."""

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query
from pydantic import Field
from fastapi.responses import PlainTextResponse, Response

from service.analyses import (
    Selection, correlations, idea_detail, quadrant_points, quadrants, systems_summary, table_rows,
    to_csv,
)
from service.analyses.answers import CorrelationsOut, CutoffsOut, QuadrantsOut, SystemsOut
from service.analyses.idea_answer import IdeaDetailOut
from service.analyses.cutoffs import MAX_CUTOFFS, cutoff_rows, cutoff_sensitivity
from service.analyses.quadrants import quadrant_counts
from service.analyses.selection import load_ideas
from service.deps import HolderDep, SessionDep, SettingsDep
from service.runs import matcher_labels
from service.schemas import date_list_pattern, json_answer
from service.errors import errors
from service.judge_scores import DimensionName

router = APIRouter(prefix="/v1/analysis", tags=["analysis"])


def _plots():
    """service.plots, imported when an image is asked for: matplotlib and what it draws with took 2.6 s of the
    server's start here (docs/startup.md)."""
    from service import plots

    return plots

RowId = Annotated[int, Field(ge=1, le=2**63 - 1)]  # SQLite's integer range: larger values overflowed into a 500
Runs = Annotated[list[RowId], Query(description="Run ids to include (repeat the parameter); all when absent.")]
Seed = Annotated[int, Query(ge=0, le=2**63 - 1, description="Bootstrap seed.")]
Systems = Annotated[list[str], Query(description="Systems to include (repeat the parameter); all when absent.")]
GroupBy = Annotated[Literal["system", "run", "window"],
                    Query(description="Group ideas per system, per system/run or per system and scoring window.")]
Format = Annotated[Literal["json", "csv"], Query(description="json, or csv for a flat table.")]
NUMBER = r"-?[0-9]{1,9}(\.[0-9]{1,9})?"
HindsightCut = Annotated[str | None, Query(pattern=f"^(matched|median|{NUMBER})$",
                                           description="matched (default), median, or a number: high = score > it.")]
JudgeCut = Annotated[str | None, Query(pattern=f"^(median|{NUMBER})$",
                                       description="median (default) or a number: high = judge score > it.")]
Dimension = Annotated[DimensionName, Query(description="The judge dimension.")]
Quadrant = Annotated[Literal["true_positive", "hidden_gem", "overhyped", "true_negative"] | None,
                     Query(description="Only this quadrant's ideas.")]
# what the store does not hold (a run, a system, a judge, anything scored) is a 404; a selection its contents make
# ambiguous (several judges and none chosen, several windows unpooled) a 409; 422 is for parameters themselves
ANALYSIS_ERRORS = errors(404, 409, 422, 503)
Responses = dict[int | str, dict[str, Any]]
JSON_OR_CSV: Responses = {200: {"description": "JSON, or a CSV table with ?format=csv.", "content": {
    "text/csv": {"schema": {"type": "string"}}}}}
IMAGE: Responses = {200: {"description": "The plot as PNG or SVG.", "content": {
    "image/png": {"schema": {"type": "string", "format": "binary"}}, "image/svg+xml": {"schema": {"type": "string"}}}}}
Level = Annotated[Literal["realised", "direction"], Query(
    description="Decision level of the HindSight score: realised (default) or direction (hybrid matcher).")]


def window_filter(
        cutoff: Annotated[str | None, Query(description="Only scores whose window starts on this date (YYYY-MM-DD).",
                                            json_schema_extra={"format": "date"})] = None,
        until: Annotated[str | None, Query(description="Only scores whose window ends on this date (YYYY-MM-DD).",
                                           json_schema_extra={"format": "date"})] = None,
        pool_windows: Annotated[bool, Query(description="Pool scores made in different windows (refused by "
                                                        "default: they measure different futures).")] = False) -> dict:
    return {"cutoff": cutoff, "until": until, "pool_windows": pool_windows}


Windows = Annotated[dict, Depends(window_filter)]


def _selection(runs: list[int], systems: list[str], group_by: str, windows: dict | None = None,
               level: str = "realised") -> Selection:
    return Selection(runs=tuple(runs), systems=tuple(systems), group_by=group_by, level=level, **(windows or {}))


def _answer(kind: str, answer: dict, fmt: str, table: str | None):
    if fmt == "json":
        return answer
    return PlainTextResponse(to_csv(table_rows(kind, answer, table)), media_type="text/csv",
                             headers={"Content-Disposition": f'attachment; filename="{kind}-{table or "table"}.csv"'})


@router.get("/systems", **json_answer(SystemsOut, dumps=True), responses=JSON_OR_CSV | ANALYSIS_ERRORS)
def systems(session: SessionDep, windows: Windows, runs: Runs = [], systems: Systems = [],
            group_by: GroupBy = "system", level: Level = "realised",
            n_resamples: Annotated[int, Query(ge=100, le=20000)] = 2000, seed: Seed = 0,
            format: Format = "json", table: Literal["groups", "comparisons"] | None = None):
    """Per system: ideas, mean HindSight score with a bootstrap 95% CI, match rate, judge means; comparisons."""
    answer = systems_summary(session, selection=_selection(runs, systems, group_by, windows, level),
                             n_resamples=n_resamples, seed=seed)
    return _answer("systems", answer, format, table)


@router.get("/correlations", **json_answer(CorrelationsOut, dumps=True), responses=JSON_OR_CSV | ANALYSIS_ERRORS)
def correlation(session: SessionDep, windows: Windows, runs: Runs = [], systems: Systems = [],
                group_by: GroupBy = "system", level: Level = "realised",
                judge: str | None = None, format: Format = "json"):
    """Spearman rho and p between the HindSight score and each judge dimension, overall and per group."""
    return _answer("correlations", correlations(session, selection=_selection(runs, systems, group_by, windows, level),
                                                judge=judge), format, None)


@router.get("/quadrants", **json_answer(QuadrantsOut, dumps=True), responses=JSON_OR_CSV | ANALYSIS_ERRORS)
def quadrant_table(session: SessionDep, windows: Windows, runs: Runs = [], systems: Systems = [],
                   group_by: GroupBy = "system", level: Level = "realised",
             judge: str | None = None, dimension: Dimension = "overall", hindsight_cut: HindsightCut = None,
             judge_cut: JudgeCut = None, quadrant: Quadrant = None,
             sort: Literal["score", "judge", "idea_id", "group"] = "score", order: Literal["asc", "desc"] = "desc",
             page: Annotated[int, Query(ge=1)] = 1, page_size: Annotated[int, Query(ge=1, le=1000)] = 20,
             format: Format = "json", table: Literal["counts", "ideas"] | None = None):
    """Quadrant counts and shares per group (cuts echoed) and a sorted page of ideas per quadrant with best match."""
    answer = quadrants(session, selection=_selection(runs, systems, group_by, windows, level), judge=judge,
                       dimension=dimension, hindsight_cut=hindsight_cut, judge_cut=judge_cut, quadrant=quadrant,
                       sort=sort, order=order, page=page,
                       page_size=None if format == "csv" and table == "ideas" else page_size)
    return _answer("quadrants", answer, format, table)


@router.get("/quadrants.{fmt}", response_class=Response, responses=IMAGE | ANALYSIS_ERRORS)
def quadrant_image(fmt: Literal["png", "svg"], session: SessionDep, windows: Windows, runs: Runs = [],
                   systems: Systems = [], group_by: GroupBy = "system", level: Level = "realised",
                   judge: str | None = None, dimension: Dimension = "overall",
                   hindsight_cut: HindsightCut = None, judge_cut: JudgeCut = None) -> Response:
    """The quadrant scatter: HindSight vs judge score, one colour per group, cut lines, shares per quadrant."""
    selection = _selection(runs, systems, group_by, windows, level)
    frame, meta = quadrant_points(session, selection=selection, judge=judge, dimension=dimension,
                                  hindsight_cut=hindsight_cut, judge_cut=judge_cut)
    answer = {**meta, "counts": quadrant_counts(frame)}
    return Response(_plots().quadrant_plot(frame, answer, fmt=fmt, matchers=matcher_labels(session, frame["score_id"])),
                    media_type=_plots().FORMATS[fmt])


@router.get("/distributions.{fmt}", response_class=Response, responses=IMAGE | ANALYSIS_ERRORS)
def distribution_image(fmt: Literal["png", "svg"], session: SessionDep, windows: Windows, runs: Runs = [],
                       systems: Systems = [], group_by: GroupBy = "system", level: Level = "realised") -> Response:
    """Per-group HindSight score distributions."""
    ideas = load_ideas(session, _selection(runs, systems, group_by, windows, level))
    return Response(_plots().distribution_plot(ideas, fmt=fmt, matchers=matcher_labels(session, ideas["score_id"])),
                    media_type=_plots().FORMATS[fmt])


def _sensitivity(session, settings, holder, *, runs, systems, group_by, cutoffs, until, top_k, n_resamples, seed):
    loaded = holder.current()
    return cutoff_sensitivity(session, loaded=loaded, embedder=holder.embedder_for(loaded),
                              selection=_selection(runs, systems, group_by), cutoffs=cutoffs, until=until,
                              top_k=top_k or settings.matcher.top_k, n_resamples=n_resamples, seed=seed)


# the pattern is checked by the handler's own parser (its 422 names the field and the built range)
Cutoffs = Annotated[str, Query(max_length=1000, description=f"1 to {MAX_CUTOFFS} comma-separated cutoff dates "
                               "(YYYY-MM-DD) inside the index's built window (409 outside it), e.g. "
                               "2023-06-01,2023-12-01,2024-06-01.",
                               json_schema_extra={"pattern": date_list_pattern(MAX_CUTOFFS)},
                               examples=["2023-06-01,2023-12-01"])]
Until = Annotated[str | None, Query(max_length=64, json_schema_extra={"format": "date"},
                                    description="Window end for every cutoff (YYYY-MM-DD, inside the built window); "
                                                "default the built end.")]
TopK = Annotated[int | None, Query(ge=1, le=200)]
SensitivityBy = Annotated[Literal["system", "run"], Query(description="Group per system or per system/run.")]


@router.get("/cutoffs", **json_answer(CutoffsOut, dumps=True), responses=JSON_OR_CSV | ANALYSIS_ERRORS)
def cutoffs(session: SessionDep, settings: SettingsDep, holder: HolderDep, cutoffs: Cutoffs, runs: Runs = [],
            systems: Systems = [], group_by: SensitivityBy = "system", until: Until = None, top_k: TopK = None,
            n_resamples: Annotated[int, Query(ge=100, le=20000)] = 2000, seed: Seed = 0, format: Format = "json"):
    """Cutoff sensitivity: the runs' ideas re-scored at each cutoff (not stored): per system mean score [CI],
    match rate, leak risk, comparisons, and whether each pair's leader survives every cutoff."""
    answer = _sensitivity(session, settings, holder, runs=runs, systems=systems, group_by=group_by, cutoffs=cutoffs,
                          until=until, top_k=top_k, n_resamples=n_resamples, seed=seed)
    if format == "csv":
        return PlainTextResponse(to_csv(cutoff_rows(answer)), media_type="text/csv",
                                 headers={"Content-Disposition": 'attachment; filename="cutoffs.csv"'})
    return answer


@router.get("/cutoffs.{fmt}", response_class=Response, responses=IMAGE | ANALYSIS_ERRORS)
def cutoffs_image(fmt: Literal["png", "svg"], session: SessionDep, settings: SettingsDep, holder: HolderDep,
                  cutoffs: Cutoffs, runs: Runs = [], systems: Systems = [], group_by: SensitivityBy = "system",
                  until: Until = None, top_k: TopK = None, seed: Seed = 0) -> Response:
    """The sensitivity plot: mean score (95% CI) and match rate per system at each cutoff."""
    answer = _sensitivity(session, settings, holder, runs=runs, systems=systems, group_by=group_by, cutoffs=cutoffs,
                          until=until, top_k=top_k, n_resamples=1000, seed=seed)
    return Response(_plots().cutoff_plot(answer, fmt=fmt), media_type=_plots().FORMATS[fmt])


@router.get("/ideas/{idea_pk}", **json_answer(IdeaDetailOut), responses=errors(404, 422))
def idea(idea_pk: Annotated[int, Path(ge=1, le=2**63 - 1)], session: SessionDep) -> dict:
    """One idea with its score context, every retrieved paper (similarity, impact) and its judge scores."""
    return idea_detail(session, idea_pk=idea_pk)
