"""Stored runs, their scores and their ideas."""

import json

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from service.analyses import to_csv
from service.answers import RunIdeasOut, RunOut, RunScoresOut
from service.deps import SessionDep
from service.errors import errors
from service.schemas import json_answer
from service.runs import find_run, list_runs, run_ideas, run_scores

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.get("", **json_answer(list[RunOut]), responses=errors(503))
def runs(session: SessionDep) -> list[dict]:
    """Every run with its system, idea count, mean score and match rate."""
    return list_runs(session)


@router.get("/{run}/scores", **json_answer(RunScoresOut), responses=errors(404, 422, 503))
def scores(run: str, session: SessionDep, system: str | None = None) -> dict:
    """The stored scores of one run (by id, or by label with ?system=)."""
    return run_scores(session, find_run(session, run, system))


@router.get("/{run}/ideas", **json_answer(RunIdeasOut, dumps=True), responses=errors(404, 422, 503) | {200: {
    "description": "JSON rows, or a CSV table with ?format=csv.",
    "content": {"text/csv": {"schema": {"type": "string"}}}}})
def ideas(run: str, session: SessionDep, system: str | None = None,
          format: Annotated[Literal["json", "csv"], Query(description="json, or csv for a flat table.")] = "json"):
    """Every idea of one run, one flat row each: origin (file, generator, topic, title), score, realised and
    direction decisions, best match, and the matcher, thresholds and window it was scored with."""
    found = find_run(session, run, system)
    rows = run_ideas(session, found)
    if format == "csv":
        flat = [{**r, **{k: json.dumps(r[k]) if r[k] is not None else None for k in ("thresholds", "warnings")}}
                for r in rows]
        return PlainTextResponse(to_csv(flat), media_type="text/csv", headers={
            "Content-Disposition": f'attachment; filename="run-{found.id}-ideas.csv"'})
    return {"run_id": found.id, "system": found.system, "run": found.label, "ideas": rows}
