"""Liveness and readiness."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from service.answers import HealthOut, ReadyOut
from service.deps import HolderDep
from service.schemas import json_answer

router = APIRouter(tags=["health"])


@router.get("/healthz", **json_answer(HealthOut))
def healthz() -> dict:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", **json_answer(ReadyOut, dumps=True),
            responses={503: {"description": "Not ready: no index loaded, or its vector store (Qdrant) cannot be "
                                             "reached; the reason is given.",
                             "content": {"application/json": {"schema": {"type": "object"}}}}})
def readyz(holder: HolderDep):
    """Ready when an index version is loaded and its store answers (degraded when the pointer names a refused
    version or is missing); otherwise 503 with the reason. `index` names the backend (Qdrant: collection, alias)."""
    status = holder.status()
    reason = holder.not_ready_reason() or status["unavailable"]
    if reason:
        return JSONResponse({"status": "not ready", "reason": reason, **status}, status_code=503)
    return {"status": "degraded" if status["warning"] else "ready", **status}
