"""Papers: look one up; ingest a file (admin)."""

from typing import Annotated, Literal

from fastapi import APIRouter, File, Query, UploadFile
from pydantic import BaseModel, Field, StrictBool
from starlette.concurrency import run_in_threadpool

from indexing.fetch import openalex, s2
from indexing.fetch.refresh import refresh_citations
from indexing.fetch.walk import run as run_walk
from indexing.ingest import ingest_bytes
from indexing.sources.formats import VENUE_YEAR
from service.answers import IngestOut, JobOut
from service.deps import AdminDep, JobsDep, SessionDep, SettingsDep
from service.errors import ADMIN, BODY, errors
from service.papers import PaperOut, paper_named, paper_out
from service.schemas import IsoDate, json_answer
from service.uploads import read_within

router = APIRouter(prefix="/v1/papers", tags=["papers"])


class FetchRequest(BaseModel):
    """A corpus walk; the base URL and keys come from the server's settings."""

    source: Literal["openalex", "s2"]
    from_date: IsoDate | None = None
    to_date: IsoDate | None = None
    search: str | None = Field(None, max_length=1000, description="OpenAlex search= / S2 bulk query.")
    topics: list[str] = Field([], max_length=100, description="OpenAlex topic ids.")
    concepts: list[str] = Field([], max_length=100, description="OpenAlex concept ids.")
    source_ids: list[str] = Field([], max_length=100, description="OpenAlex venue source ids.")
    venues: list[str] = Field([], max_length=100, description="Venue names (OpenAlex: resolved to source ids).")
    fields_of_study: list[str] = Field([], max_length=20, description="S2 fields of study.")
    types: list[str] = Field([], max_length=20, description="OpenAlex work types / S2 publication types.")
    restart: StrictBool = False


class RefreshRequest(BaseModel):
    source: Literal["openalex", "s2"] = "s2"
    cutoff: IsoDate | None = None
    until: IsoDate | None = None
    force: StrictBool = False


@router.post("/fetch", dependencies=[AdminDep], status_code=202, **json_answer(JobOut),
             responses=errors(*ADMIN, *BODY, 422))
def fetch(req: FetchRequest, settings: SettingsDep, jobs: JobsDep) -> dict:
    """Walk an API into the store in the background (resumes from its checkpoint); poll GET /v1/jobs/{id}."""
    def run(progress) -> dict:
        if req.source == "s2":
            plan = s2.plan(settings, query=req.search, from_date=req.from_date, to_date=req.to_date,
                           venues=req.venues, fields_of_study=req.fields_of_study, publication_types=req.types)
            return run_walk(settings, plan, restart=req.restart, progress=progress).as_dict()
        resolved = openalex.resolve_venues(settings, req.venues) if req.venues else []
        plan = openalex.plan(settings, from_date=req.from_date, to_date=req.to_date, search=req.search,
                             topics=req.topics, concepts=req.concepts, types=req.types,
                             source_ids=[*req.source_ids, *(v["id"] for v in resolved)])
        return run_walk(settings, plan, restart=req.restart, progress=progress).as_dict() | {"venues": resolved}

    return jobs.submit(f"fetch-{req.source}", run)


@router.post("/refresh-citations", dependencies=[AdminDep], status_code=202, **json_answer(JobOut),
             responses=errors(*ADMIN, *BODY, 422))
def refresh(settings: SettingsDep, jobs: JobsDep, req: RefreshRequest | None = None) -> dict:
    """Refresh the citation counts of the papers in the window in the background; poll GET /v1/jobs/{id}."""
    req = req or RefreshRequest()
    return jobs.submit(f"refresh-citations-{req.source}", lambda progress: refresh_citations(
        settings, source=req.source, cutoff=req.cutoff, until=req.until, force=req.force, progress=progress))


@router.get("/{paper_id:path}", response_model=PaperOut, responses=errors(404, 503))
def get_paper(paper_id: str, session: SessionDep) -> PaperOut:
    """One paper by its source's own id."""
    return paper_out(paper_named(session, paper_id))


@router.post("", dependencies=[AdminDep], **json_answer(IngestOut), responses=errors(*ADMIN, *BODY, 422, 503))
async def ingest(file: Annotated[UploadFile, File(description=(
                     "A paper file of the `format` named (docs/ingest-and-fetch.md); a file with a bad row is refused "
                     "(422, every error by line and field) unless skip_invalid."))],
                 settings: SettingsDep,
                 format: Annotated[Literal["auto", "jsonl", "csv", "paperlists", "openalex", "s2"], Query()] = "auto",
                 skip_invalid: bool = False,
                 venue_year: Annotated[str | None, Query(
                     pattern=VENUE_YEAR,
                     description="A paperlists file's venue and year when the upload's filename does not give "
                                 "them (e.g. iclr2024 for iclr2024.json; read by no other format)")] = None) -> dict:
    """Ingest an uploaded paper file with the CLI's rules: invalid rows reject the whole file unless skip_invalid."""
    data, = await read_within([file], settings.service.max_upload_bytes)
    report = await run_in_threadpool(ingest_bytes, data, file.filename or "upload", db_path=settings.db_path,
                                     fmt=format, skip_invalid=skip_invalid, venue_year=venue_year)
    return report.as_dict()
