"""Papers: look one up; ingest a file (admin)."""

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, UploadFile
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from indexing.ingest import IngestRejected, ingest_bytes
from indexing.models import Paper
from service.deps import AdminDep, SessionDep, SettingsDep
from service.errors import ADMIN, BODY, errors

router = APIRouter(prefix="/v1/papers", tags=["papers"])


def paper_dict(p: Paper) -> dict:
    return {"paper_id": p.paper_id, "source": p.source, "title": p.title, "abstract": p.abstract,
            "publication_date": p.publication_date.isoformat(), "date_rule": p.date_rule, "year": p.year,
            "venue": p.venue, "status": p.status, "citation_count": p.citation_count, "doi": p.doi,
            "arxiv_id": p.arxiv_id, "updated_at": p.updated_at.isoformat()}


@router.get("/{paper_id:path}", responses=errors(404, 503))
def get_paper(paper_id: str, session: SessionDep) -> dict:
    """One paper by its source's own id."""
    paper = session.scalars(select(Paper).where(Paper.paper_id == paper_id)).first()
    if paper is None:
        raise HTTPException(404, f"no paper with id {paper_id!r}")
    return paper_dict(paper)


@router.post("", dependencies=[AdminDep], responses=errors(*ADMIN, *BODY, 422, 503))
async def ingest(file: UploadFile, settings: SettingsDep,
                 format: Annotated[Literal["auto", "jsonl", "csv", "paperlists", "openalex", "s2"], Query()] = "auto",
                 skip_invalid: bool = False) -> dict:
    """Ingest an uploaded paper file with the CLI's rules: invalid rows reject the whole file unless skip_invalid."""
    limit = settings.max_upload_bytes  # the body as a whole: FastAPI's max_body_size (service.app)
    data = await file.read(limit + 1)
    if len(data) > limit:
        raise HTTPException(413, f"upload exceeds the limit of {limit} bytes (HINDSIGHT_MAX_UPLOAD_BYTES)")
    name = file.filename or "upload"
    try:
        report = await run_in_threadpool(ingest_bytes, data, name, db_path=settings.db_path, fmt=format,
                                         skip_invalid=skip_invalid)
    except IngestRejected as exc:
        raise HTTPException(422, {"message": str(exc).splitlines()[0], **exc.report.as_dict()}) from None
    return report.as_dict()
