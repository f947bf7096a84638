"""Outside judges' scores: import a file of them (admin); list the judges."""

from typing import Annotated, Literal

from fastapi import APIRouter, File, Query, UploadFile
from starlette.concurrency import run_in_threadpool

from indexing.db import session_scope
from indexing.settings import Settings

from service.answers import JudgeImportOut, JudgeOut
from service.deps import AdminDep, SessionDep, SettingsDep
from service.errors import ADMIN, BODY, errors
from service.judge_scores import JudgeImportReport, import_judge_scores, list_judges
from service.runs import require_runs
from service.schemas import json_answer
from service.uploads import read_within

router = APIRouter(prefix="/v1/judge-scores", tags=["judge scores"])


def _import(data: bytes, *, settings: Settings, **options) -> JudgeImportReport:
    # its own transaction, committed before the answer is sent
    with session_scope(settings.db_path) as session:
        return import_judge_scores(session, data, **options)


@router.get("", **json_answer(list[JudgeOut]), responses=errors(503))
def judges(session: SessionDep) -> list[dict]:
    """Every judge with how many ideas it scored, per dimension."""
    return list_judges(session)


@router.post("", dependencies=[AdminDep], **json_answer(JudgeImportOut), responses=errors(*ADMIN, *BODY, 404, 422, 503))
async def import_file(file: Annotated[UploadFile, File(description="CSV or JSONL: idea_id, judge and any of the score "
                                                                  "columns, optionally system and run; every idea must "
                                                                  "be stored (422 naming the line otherwise).",
                                                      json_schema_extra={"minLength": 1})],
                      settings: SettingsDep, session: SessionDep,
                      format: Annotated[Literal["auto", "csv", "jsonl"], Query()] = "auto",
                      system: Annotated[str | None, Query(min_length=1, max_length=255)] = None,
                      run: Annotated[str | None, Query(min_length=1, max_length=255)] = None) -> dict:
    """Import a CSV or JSONL of judge scores; any bad row rejects the file (422, errors by line), nothing written."""
    if system or run:
        require_runs(session, system=system, run=run)
    data, = await read_within([file], settings.service.max_upload_bytes)
    report = await run_in_threadpool(_import, data, settings=settings, name=file.filename or "upload", fmt=format,
                                     system=system, run=run)
    return report.as_dict()
