"""The LLM judge: rating a stored run as a background job (admin: it spends model calls and writes judge scores),
its prompt versions, its revisions with their invalid counts, and the audit of two judges. Each route is served at
its old name too (/v1/judging/*, /v1/runs/{run}/judge), deprecated, for one release."""

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select

from indexing.llm import ModelUnavailable
from indexing.models import JudgeAnswer
from service.answers import JobOut
from service.deps import AdminDep, JobsDep, SessionDep, SettingsDep
from service.errors import ADMIN, BODY, errors
from service.llm_judge import audit as audits
from service.llm_judge import pointwise, prompts
from service.llm_judge.answers import AuditOut, PromptOut, RevisionOut
from service.llm_judge.backends import JudgeProcess, check_backend, make_judge
from service.llm_judge.cache import revisions
from service.runs import run_id_of, run_ids_of
from service.schemas import json_answer

router = APIRouter(tags=["llm judge"])


def route(method: str, path: str, old: str, **options: Any) -> Callable[[Callable], Callable]:
    """Serve a handler at path and, deprecated (the old name, kept for one release), at old: the same handler,
    answer model and errors."""
    def register(handler: Callable) -> Callable:
        add = getattr(router, method)
        add(path, **options)(handler)
        doc = inspect.cleandoc(handler.__doc__ or "")
        add(old, deprecated=True, **options,
            description=f"Old name of {method.upper()} {path}, kept for one release.\n\n{doc}")(handler)
        return handler
    return register


class JudgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backend: Literal["local", "openai"] = Field("local", description="local: the packaged model.")
    # the known versions, so that the schema says what is accepted (an unknown name is a schema error)
    prompt: Literal[tuple(prompts.PROMPTS)] = Field(  # type: ignore[valid-type]
        prompts.DEFAULT, description="A prompt version (GET /v1/llm-judge/prompts).")
    samples: int = Field(1, ge=1, le=20, description="1: the expected rating; N: the mean of N sampled answers.")


def _kind(run_id: int) -> str:
    return f"judge-run-{run_id}"


@route("post", "/v1/runs/{run}/llm-judge", "/v1/runs/{run}/judge", dependencies=[AdminDep], status_code=202,
       **json_answer(JobOut), responses=errors(*ADMIN, *BODY, 404, 409, 422))
def start(run: str, settings: SettingsDep, jobs: JobsDep, req: JudgeRequest | None = None,
          system: str | None = None) -> dict:
    """Start judging a stored run in the background; poll GET /v1/runs/{run}/llm-judge. 409 while one runs."""
    req = req or JudgeRequest()
    run_id = run_id_of(settings.db_path, run, system)
    check_backend(req.backend, settings)
    version = prompts.get(req.prompt)

    def work(progress) -> dict:
        # loading the local model takes seconds: not in the request; it runs in a worker process, so that a crash
        # of llama.cpp fails this job and not the server
        judge = make_judge(req.backend, settings, worker=True)
        try:
            report = pointwise.judge_run(settings.db_path, run_id, judge=judge, prompt=version, samples=req.samples,
                                         progress=lambda done, total: progress("judge", 1, total))
        finally:
            if isinstance(judge, JudgeProcess):
                judge.close()
        if report.stopped:
            raise ModelUnavailable(f"stopped after {report.judged} ideas ({report.left} left): "
                                      f"{report.stopped}; post again to resume")
        return report.as_dict()

    return jobs.submit_alone(_kind(run_id), work, f"run {run_id} is being judged")


@route("get", "/v1/runs/{run}/llm-judge", "/v1/runs/{run}/judge", **json_answer(JobOut),
       responses=errors(404, 422, 503))
def state(run: str, settings: SettingsDep, jobs: JobsDep, system: str | None = None) -> dict:
    """The latest judge job of the run: status, progress (ideas done of total), result or error."""
    run_id = run_id_of(settings.db_path, run, system)
    return jobs.find_latest(_kind(run_id), f"run {run_id} has no judge job on this server")


@route("get", "/v1/llm-judge/prompts", "/v1/judging/prompts", **json_answer(list[PromptOut]))
def prompt_versions() -> list[dict]:
    """The judge's prompt versions, by name (the default marked)."""
    return [p.as_dict() for p in prompts.PROMPTS.values()]


@route("get", "/v1/llm-judge/revisions", "/v1/judging/revisions", **json_answer(list[RevisionOut]),
       responses=errors(503))
def judge_revisions(session: SessionDep) -> list[dict]:
    """Every judge made here: its stored name, what it stands for, and its answers' counts by source (invalid
    included)."""
    out = []
    for rev in revisions(session).values():
        counts = dict(session.execute(select(JudgeAnswer.source, func.count()).where(
            JudgeAnswer.revision == rev["revision"], JudgeAnswer.task == "rate").group_by(JudgeAnswer.source)).all())
        out.append({**rev, "answers": counts, "invalid": counts.get("invalid", 0)})
    return out


@route("get", "/v1/llm-judge/audit", "/v1/judging/audit", **json_answer(AuditOut), responses=errors(404, 422, 503))
def judge_audit(session: SessionDep, settings: SettingsDep,
                judge: Annotated[list[Annotated[str, Field(min_length=1, max_length=255, pattern=r"\S")]],
                                 Query(min_length=2, max_length=2, description="two different judges: a, b",
                                       json_schema_extra={"uniqueItems": True})],
                run: Annotated[list[str] | None, Query(description="runs to audit; all both judged when absent")]
                = None,
                cut: Annotated[float | None, Query(ge=1, le=10)] = None,
                n_boot: Annotated[int, Query(ge=1, le=100_000)] = 2000, seed: int = 0) -> dict:
    """The audit of two judges: per dimension, overall and per run, flips at the cut, rank agreement, mean shift,
    invalid and missing counts, bootstrap intervals."""
    # a label several systems share names each one's run, as the CLI's --run does
    run_ids = list(dict.fromkeys(i for r in run or [] for i in run_ids_of(settings.db_path, r)))
    return audits.audit(session, judges=judge, runs=run_ids or None, cut=settings.llm.judge_cut if cut is None else cut,
                        n_boot=n_boot, seed=seed)
