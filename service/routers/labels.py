"""Labels: draws, the labelling view's items, one label at a time, import and export (writes need the admin token),
and the prediction-powered estimates."""

import json
from typing import Annotated, Literal

from fastapi import APIRouter, File, Query, UploadFile
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from indexing.db import session_scope
from indexing.settings import Settings
from service.analyses.selection import Selection
from service.deps import AdminDep, SessionDep, SettingsDep
from service.errors import ADMIN, BODY, errors
from service.labels import sheets
from service.labels.answers import (
    DrawsOut, EstimatesOut, LabelImportOut, LabelItemOut, LabelOut, LabelStatusOut,
)
from service.labels.draws import draw, item, status
from service.labels.estimates import labelled_summary
from service.labels.models import LABELS
from service.labels.store import ImportReport, export_labels, import_labels, write_label
from service.schemas import json_answer
from service.uploads import read_within

router = APIRouter(prefix="/v1/labels", tags=["labels"])
Name = Annotated[str, Field(min_length=1, max_length=255, pattern=r"\S")]  # blank is no name
RunRef = Annotated[str, Query(min_length=1, max_length=255, description="Run id, or label (every system's run "
                                                                         "with it).")]
SystemRef = Annotated[str | None, Query(min_length=1, max_length=255, description="Only this system's run.")]


class DrawRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: Name = Field(description="Run id or label.")
    n: int = Field(ge=1, le=100_000, description="Ideas to draw from each system's run.")
    seed: int | None = Field(None, ge=0, le=2**32 - 1, description="Random seed (a random one, stored, when absent).")
    system: Name | None = None


class LabelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run: Name
    system: Name | None = None
    idea_id: Name
    paper_id: Name
    label: Literal[LABELS]  # type: ignore[valid-type]
    annotator: Annotated[str, Field(min_length=1, max_length=128, pattern=r"\S")]


@router.post("/draws", dependencies=[AdminDep], status_code=201, **json_answer(DrawsOut),
             responses=errors(*ADMIN, *BODY, 404, 409, 422))
def make_draw(req: DrawRequest, session: SessionDep) -> dict:
    """Draw n ideas at random from each system's scored ideas of the run not drawn yet, and store the draw."""
    return draw(session, run=req.run, n=req.n, seed=req.seed, system=req.system)


@router.get("/status", **json_answer(LabelStatusOut), responses=errors(404, 422, 503))
def draws_status(session: SessionDep, run: RunRef, system: SystemRef = None) -> dict:
    """Per draw, ideas labelled of drawn per annotator; labels of ideas outside any draw."""
    return status(session, run=run, system=system)


@router.get("/draws/{draw_id}/item", **json_answer(LabelItemOut), responses=errors(404, 422, 503))
def draw_item(draw_id: Annotated[int, Field(ge=1, le=2**63 - 1)], session: SessionDep, settings: SettingsDep,
              annotator: Annotated[str, Query(min_length=1, max_length=128, pattern=r"\S")],
              position: Annotated[int | None, Query(ge=1, le=10**9, description="This position; the annotator's "
                                                                                 "first unlabelled one when absent.")]
              = None,
              top_k: Annotated[int | None, Query(ge=1, le=50, description="Candidates shown (HINDSIGHT_LABELS_TOP_K "
                                                                         "when absent).")] = None) -> dict:
    """One drawn idea to label: its problem, method, top K candidates with evidence, the annotator's labels."""
    return item(session, draw_id=draw_id, annotator=annotator, top_k=top_k or settings.labels.labels_top_k,
                position=position)


@router.get("/draws/{draw_id}/sheet", response_class=Response, responses={**errors(404, 422, 503), 200: {
    "description": "One row per drawn idea and candidate, the label blank to fill: JSONL or CSV.",
    "content": {"application/x-ndjson": {"schema": {"type": "string"}}, "text/csv": {"schema": {"type": "string"}}}}})
def draw_sheet(draw_id: Annotated[int, Field(ge=1, le=2**63 - 1)], session: SessionDep, settings: SettingsDep,
               candidates: Annotated[int | None, Query(ge=1, le=50, description="Candidates per idea "
                                                                               "(HINDSIGHT_LABELS_TOP_K when "
                                                                               "absent).")] = None,
               format: Annotated[Literal["jsonl", "csv"], Query()] = "jsonl") -> Response:
    """The draw as a sheet to label elsewhere (`hindsight label export --draw`); POST /v1/labels/import reads it."""
    rows = sheets.sheet_rows(session, draws=[draw_id], candidates=candidates or settings.labels.labels_top_k)
    if format == "csv":
        return Response(sheets.to_csv(rows), media_type="text/csv", headers={
            "Content-Disposition": f'attachment; filename="draw-{draw_id}.csv"'})
    return Response(sheets.to_jsonl(rows), media_type="application/x-ndjson")


@router.post("", dependencies=[AdminDep], **json_answer(LabelOut), responses=errors(*ADMIN, *BODY, 404, 422, 503))
def label_one(req: LabelRequest, session: SessionDep) -> dict:
    """Write one label now (insert or replace): a closed tab loses nothing written before it."""
    return write_label(session, run=req.run, system=req.system, idea_id=req.idea_id, paper_id=req.paper_id,
                       label=req.label, annotator=req.annotator)


def _import(data: bytes, *, settings: Settings, **options) -> ImportReport:
    with session_scope(settings.db_path) as session:  # its own transaction, committed before the answer
        return import_labels(session, data, **options)


@router.post("/import", dependencies=[AdminDep], **json_answer(LabelImportOut),
             responses=errors(*ADMIN, *BODY, 422, 503))
async def import_file(file: Annotated[UploadFile, File(description="JSONL labels rows, the judged format, or a "
                                                                   "draw's sheet (JSONL or CSV).",
                                                      json_schema_extra={"minLength": 1})],
                      settings: SettingsDep,
                      format: Annotated[Literal["auto", "labels", "judged", "sheet"], Query()] = "auto",
                      run: Annotated[str | None, Query(min_length=1, max_length=255)] = None,
                      system: SystemRef = None,
                      annotator: Annotated[str | None, Query(min_length=1, max_length=128, pattern=r"\S")] = None,
                      ) -> dict:
    """Import a labels file; any bad row rejects it (422, errors by line and field) and nothing is written."""
    data, = await read_within([file], settings.service.max_upload_bytes)
    report = await run_in_threadpool(_import, data, settings=settings, name=file.filename or "upload", fmt=format,
                                     run=run, system=system, annotator=annotator)
    return report.as_dict()


@router.get("/export", response_class=Response, responses={**errors(404, 422, 503), 200: {
    "description": "JSONL, one label per line.", "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}})
def export(session: SessionDep, run: RunRef, system: SystemRef = None) -> Response:
    """The run's labels as the JSONL that import reads."""
    rows = export_labels(session, run=run, system=system)
    return Response("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    media_type="application/x-ndjson")


@router.get("/estimates", **json_answer(EstimatesOut), responses=errors(404, 409, 422, 503))
def estimates(session: SessionDep, settings: SettingsDep,
              runs: Annotated[list[Annotated[int, Field(ge=1, le=2**63 - 1)]],
                              Query(description="Run ids (repeat); all when absent.")] = [],
              systems: Annotated[list[str], Query(description="Systems (repeat); all when absent.")] = [],
              group_by: Annotated[Literal["system", "run"], Query()] = "system",
              confidence: Annotated[float, Query(ge=0.5, lt=1)] = 0.95,
              predictor: Annotated[Literal["decision", "probability", "cosine"], Query()] = "decision",
              annotator: Annotated[str | None, Query(min_length=1, max_length=128, pattern=r"\S")] = None,
              pool_windows: bool = False) -> dict:
    """`hindsight analyze systems --labels`: per group the matcher's figure, labels_only and ppi with intervals, the
    differences between groups, and the matcher's agreement with the labels."""
    selection = Selection(runs=tuple(runs), systems=tuple(systems), group_by=group_by, pool_windows=pool_windows)
    return labelled_summary(session, selection=selection, confidence=confidence, predictor=predictor,
                            annotator=annotator, shown=settings.labels.labels_top_k, indexes_dir=settings.indexes_dir)
