"""The index: its manifest and status; rebuilds as background jobs (admin)."""

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from indexing.build import build_index
from indexing.models import IndexBuild
from service.answers import IndexStatusOut, JobOut
from service.deps import AdminDep, HolderDep, JobsDep, SessionDep, SettingsDep
from service.errors import ADMIN, BODY, errors
from service.schemas import IsoDate, json_answer

router = APIRouter(prefix="/v1", tags=["index"])
QUEUED_BUILD_WAIT = 3600.0  # seconds a rebuild job waits for a build another process (the CLI) is running


class RebuildRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: Literal["minilm", "specter2"] | None = Field(None, description="The embedder; the server's default "
                                                                            "when absent.")
    cutoff: IsoDate | None = Field(None, description="First day of the window (YYYY-MM-DD).")
    until: IsoDate | None = Field(None, description="Last day of the window (YYYY-MM-DD).")


@router.get("/index", **json_answer(IndexStatusOut), responses=errors(503))
def index_status(holder: HolderDep, session: SessionDep) -> dict:
    """The current manifest, what the server has loaded, and the latest builds."""
    loaded = holder.loaded()
    manifest = loaded.manifest if loaded else None
    reason = None if loaded else holder.not_ready_reason() or "no index loaded"
    builds = session.scalars(select(IndexBuild).order_by(IndexBuild.id.desc()).limit(10)).all()
    return {"manifest": manifest, "not_ready_reason": reason, **holder.status(),
            "recent_builds": [{"id": b.id, "version": b.version, "status": b.status, "model": b.model,
                               "started": b.started_at.isoformat(), "error": b.error} for b in builds]}


@router.post("/index/rebuild", dependencies=[AdminDep], status_code=202, **json_answer(JobOut),
             responses=errors(*ADMIN, *BODY, 422))
def rebuild(settings: SettingsDep, holder: HolderDep, jobs: JobsDep, req: RebuildRequest | None = None) -> dict:
    """Start a rebuild in the background; poll GET /v1/jobs/{id}."""
    req = req or RebuildRequest()

    def run(progress) -> dict:
        result = build_index(settings, model=req.model, cutoff=req.cutoff, until=req.until, progress=progress,
                             wait=QUEUED_BUILD_WAIT)
        holder.refresh()
        return {"version": result.version, "seconds": round(result.seconds, 3), "counts": result.manifest["counts"]}

    return jobs.submit("index-rebuild", run)


@router.get("/jobs/{job_id}", **json_answer(JobOut), responses=errors(404, 422))
def job(job_id: str, jobs: JobsDep) -> dict:
    """A background job's status, progress and result."""
    return jobs.find(job_id)
