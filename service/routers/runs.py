"""Stored runs and their scores."""

from fastapi import APIRouter, HTTPException

from service.deps import SessionDep
from service.errors import errors
from service.runs import RunNotFound, find_run, list_runs, run_scores

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.get("", responses=errors(503))
def runs(session: SessionDep) -> list[dict]:
    """Every run with its system, idea count, mean score and match rate."""
    return list_runs(session)


@router.get("/{run}/scores", responses=errors(404, 422, 503))
def scores(run: str, session: SessionDep, system: str | None = None) -> dict:
    """The stored scores of one run (by id, or by label with ?system=)."""
    try:
        return run_scores(session, find_run(session, run, system))
    except RunNotFound as exc:
        raise HTTPException(404, str(exc)) from None
