"""GET /v1/report: the evaluation of the chosen runs as one self-contained HTML page (service/report)."""

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse
from pydantic import Field

from service.deps import SessionDep, SettingsDep
from service.errors import errors
from service.judge_scores import DimensionName
from service.report.gather import ReportRequest, gather
from service.report.html import POLICY, render_html

router = APIRouter(prefix="/v1", tags=["report"])

RunId = Annotated[int, Field(ge=1, le=2**63 - 1)]
Day = Annotated[str | None, Query(max_length=64, json_schema_extra={"format": "date"})]
PAGE: dict[int | str, dict[str, Any]] = {200: {
    "description": "The report: one HTML page with inline CSS and SVG that requests nothing.",
    "content": {"text/html": {"schema": {"type": "string"}}}}}


@router.get("/report", response_class=HTMLResponse, responses=PAGE | errors(404, 409, 422))
def report(session: SessionDep, settings: SettingsDep,
           runs: Annotated[list[RunId], Query(description="Run ids to report (repeat the parameter); all when "
                                                          "absent.")] = [],
           judge: Annotated[str | None, Query(max_length=255, description="The judge of the quadrants and "
                                                                          "correlations.")] = None,
           labels: Annotated[bool, Query(description="Add the estimates from labels.")] = False,
           group_by: Annotated[Literal["system", "run", "window"] | None,
                               Query(description="Default: system; scores of several windows, unpooled, are "
                                                 "grouped per window.")] = None,
           level: Literal["realised", "direction"] = "realised",
           cutoff: Day = None, until: Day = None, pool_windows: bool = False,
           dimension: DimensionName = "overall",
           download: Annotated[bool, Query(description="Answer as a file to save.")] = False) -> HTMLResponse:
    """The report `hindsight report --out report.html` writes, for these runs."""
    request = ReportRequest(runs=tuple(str(r) for r in runs), judge=judge, labels=labels, group_by=group_by,
                            level=level, cutoff=cutoff, until=until, pool_windows=pool_windows, dimension=dimension)
    page = render_html(gather(session, settings, request))
    headers = {"Content-Security-Policy": POLICY}
    if download:
        headers["Content-Disposition"] = 'attachment; filename="hindsight-report.html"'
    return HTMLResponse(page, headers=headers)
