"""The index: its manifest and status; rebuilds as background jobs (admin)."""

from datetime import date

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel
from sqlalchemy import select

from indexing.build import build_index
from indexing.models import IndexBuild
from service.deps import AdminDep, HolderDep, JobsDep, SessionDep, SettingsDep
from service.state import NoIndex

router = APIRouter(prefix="/v1", tags=["index"])


class RebuildRequest(BaseModel):
    model: str | None = None
    cutoff: date | None = None
    until: date | None = None


@router.get("/index")
def index_status(holder: HolderDep, session: SessionDep) -> dict:
    """The current manifest, what the server has loaded, and the latest builds."""
    try:
        manifest = holder.current().manifest
    except NoIndex as exc:
        manifest, reason = None, str(exc)
    else:
        reason = None
    builds = session.scalars(select(IndexBuild).order_by(IndexBuild.id.desc()).limit(10)).all()
    return {"manifest": manifest, "not_ready_reason": reason, **holder.status(),
            "recent_builds": [{"id": b.id, "version": b.version, "status": b.status, "model": b.model,
                               "started": b.started_at.isoformat(), "error": b.error} for b in builds]}


@router.post("/index/rebuild", dependencies=[AdminDep], status_code=202)
def rebuild(settings: SettingsDep, holder: HolderDep, jobs: JobsDep, req: RebuildRequest | None = None) -> dict:
    """Start a rebuild in the background; poll GET /v1/jobs/{id}."""
    req = req or RebuildRequest()

    def run(progress) -> dict:
        result = build_index(settings, model=req.model, cutoff=req.cutoff, until=req.until, progress=progress)
        holder.refresh()
        return {"version": result.version, "seconds": round(result.seconds, 3), "counts": result.manifest["counts"]}

    return jobs.submit("index-rebuild", run)


@router.get("/jobs/{job_id}")
def job(job_id: str, jobs: JobsDep) -> dict:
    """A background job's status, progress and result."""
    found = jobs.get(job_id)
    if found is None:
        raise HTTPException(404, f"no job {job_id!r}")
    return found
