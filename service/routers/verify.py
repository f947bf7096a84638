"""Verifying a stored run as a background job (admin: it rewrites the run's decisions and spends model calls)."""

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from indexing.matcher.verifier import VerifierUnavailable, registries, rule_for
from indexing.matcher.verifier.local import VerifierProcess
from service.answers import JobOut
from service.deps import AdminDep, JobsDep, SettingsDep
from service.errors import ADMIN, BODY, errors
from service.runs import run_id_of
from service.schemas import json_answer
from service.verify import verifier_builder, verify_run

router = APIRouter(prefix="/v1/runs", tags=["runs"])


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verifier: Literal["auto", "local", "openai"] = Field("auto", description="auto: local where installed.")
    top_k: int | None = Field(None, ge=1, le=50, description="Candidates per idea to read; the server's "
                                                             "HINDSIGHT_VERIFIER_TOP_K when absent.")


def _kind(run_id: int) -> str:
    return f"verify-run-{run_id}"


@router.post("/{run}/verify", dependencies=[AdminDep], status_code=202, **json_answer(JobOut),
             responses=errors(*ADMIN, *BODY, 404, 409, 422))
def start(run: str, settings: SettingsDep, jobs: JobsDep, req: VerifyRequest | None = None,
          system: str | None = None) -> dict:
    """Start verifying a stored run in the background; poll GET /v1/runs/{run}/verify. 409 while one runs."""
    req = req or VerifyRequest()
    run_id = run_id_of(settings.db_path, run, system)
    build = verifier_builder(req.verifier, settings)
    top_k = req.top_k or settings.matcher.verifier_top_k

    def work(progress) -> dict:
        verifier = build()  # loading the local model (joining its parts on first use) takes seconds: not in the request
        try:
            report = verify_run(settings.db_path, run_id, verifier=verifier, top_k=top_k,
                                rules=lambda version: rule_for(verifier.revision, version, registries(settings)),
                                progress=lambda done, total: progress("verify", 1, total))
        finally:
            if isinstance(verifier, VerifierProcess):
                verifier.close()
        if report.stopped:
            raise VerifierUnavailable(f"stopped after {report.verified} ideas ({report.left} left): "
                                      f"{report.stopped}; post again to resume")
        return report.as_dict()

    return jobs.submit_alone(_kind(run_id), work, f"run {run_id} is being verified")


@router.get("/{run}/verify", **json_answer(JobOut), responses=errors(404, 422, 503))
def state(run: str, settings: SettingsDep, jobs: JobsDep, system: str | None = None) -> dict:
    """The latest verification job of the run: status, progress (ideas done of total), result or error."""
    run_id = run_id_of(settings.db_path, run, system)
    return jobs.find_latest(_kind(run_id), f"run {run_id} has no verification job on this server")
