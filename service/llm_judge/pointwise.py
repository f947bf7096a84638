"""Judging a stored run pointwise: each idea rated on the paper's four dimensions, the four questions asked on one
shared prefix (the idea); answers cached by (revision, idea text hash); the scores stored as judge scores under the
judge's name, so every analysis takes them at once. One idea is one transaction: a killed run resumes."""

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.db import session_scope, write_transaction
from indexing.llm import ModelUnavailable
from indexing.models import Idea, JudgeAnswer, JudgeScore, Run
from service.llm_judge import prompts
from service.llm_judge.backends import Judge
from service.llm_judge.cache import AnswerCache, decoding_of, register, text_hash
from service.llm_judge.prompts import DIMENSIONS, PromptVersion


@dataclass
class RunJudgement:
    """What a judge run did; ideas = judged + left (stopped before them)."""

    run_id: int
    judge: str  # the stored name: analyze ... --judge takes it
    revision: str
    backend: str
    prompt: str
    decoding: str
    ideas: int = 0
    judged: int = 0
    left: int = 0
    new_calls: int = 0  # questions the model answered now (each sample counts)
    cached: int = 0  # answers read from the cache
    invalid: dict[str, int] = field(default_factory=lambda: {d: 0 for d in DIMENSIONS})
    sources: dict[str, int] = field(default_factory=dict)  # logprobs | parsed | sampled | invalid, over answers
    seconds: float = 0.0
    stopped: str | None = None  # why it stopped early (budget spent, endpoint down); rerun to resume

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _ideas(db_path: Path, run_id: int) -> list[tuple[int, str]]:
    """(pk, the idea as the judge reads it) of every idea of the run, in stored order."""
    with session_scope(db_path) as session:
        if session.get(Run, run_id) is None:
            raise LookupError(f"no run {run_id}")
        rows = session.execute(select(Idea.pk, Idea.problem, Idea.method, Idea.text)
                               .where(Idea.run_id == run_id).order_by(Idea.pk)).all()
    return [(pk, prompts.idea_block(problem, method, text)) for pk, problem, method, text in rows]


def _store(db_path: Path, idea_pk: int, name: str, values: dict[str, float | None]) -> None:
    """The idea's judge scores under the judge's name; an invalid dimension is stored empty, never filled."""

    def work(session: Session) -> None:
        row = session.scalars(select(JudgeScore).where(JudgeScore.idea_pk == idea_pk,
                                                       JudgeScore.judge == name)).first()
        if row is None:
            session.add(JudgeScore(idea_pk=idea_pk, judge=name, **values))
        else:
            for k, v in values.items():
                setattr(row, k, v)

    write_transaction(db_path, work)


def judge_runs(db_path: Path, run_id: int, *, judge: Judge, versions: Sequence[PromptVersion], samples: int = 1,
               progress: Callable[[int, int], None] | None = None) -> list[RunJudgement]:
    """Rate every idea of the run under each prompt version, the versions one after another on each idea (their
    rubric is one system turn, so the idea's prefix is evaluated once for all of them); progress(done, total) after
    each idea. A backend that stops (budget, endpoint down) ends the run early with `stopped` set; what was judged
    stays."""
    started = time.perf_counter()
    ideas = _ideas(db_path, run_id)
    reports = []
    for version in versions:
        name, revision = register(db_path, judge, version, samples)
        reports.append(RunJudgement(run_id=run_id, judge=name, revision=revision, backend=judge.backend,
                                    prompt=version.name, decoding=decoding_of(samples), ideas=len(ideas)))
    cache = AnswerCache(db_path)
    stopped: str | None = None
    for done, (pk, text) in enumerate(ideas, start=1):
        key = text_hash(text)
        for version, report in zip(versions, reports):
            have = cache.get(report.revision, "rate", key)
            missing = [d for d in DIMENSIONS if d not in have]
            report.cached += len(DIMENSIONS) - len(missing)
            if missing:
                before = judge.calls
                try:
                    readings = judge.ask(version.tasks["rate"], prompts.rate_prefix(text),
                                         [version.rate[d] for d in missing], samples=samples, seed=key)
                except ModelUnavailable as exc:
                    stopped = str(exc)
                    break
                report.new_calls += judge.calls - before
                cache.put(report.revision, "rate", key, dict(zip(missing, readings)))
                have = cache.get(report.revision, "rate", key)
            for d in DIMENSIONS:
                report.invalid[d] += have[d].value is None
                report.sources[have[d].source] = report.sources.get(have[d].source, 0) + 1
            _store(db_path, pk, report.judge, {d: have[d].value for d in DIMENSIONS})
            report.judged += 1
        if stopped:
            break
        if progress:
            progress(done, len(ideas))
    for report in reports:
        report.stopped, report.left = stopped, len(ideas) - report.judged
        report.seconds = round(time.perf_counter() - started, 2)
    return reports


def judge_run(db_path: Path, run_id: int, *, judge: Judge, prompt: PromptVersion, samples: int = 1,
              progress: Callable[[int, int], None] | None = None) -> RunJudgement:
    """Rate every idea of the run under one prompt version (judge_runs)."""
    return judge_runs(db_path, run_id, judge=judge, versions=[prompt], samples=samples, progress=progress)[0]


def export_rows(session: Session, *, run_id: int, judge: str) -> tuple[list[dict], int]:
    """The run's scores by this judge as `hindsight judge import` reads them (idea_id, judge, system, run and the
    dimensions it has), and the number of ideas left out because every dimension is empty (invalid)."""
    run = session.get(Run, run_id)
    if run is None:
        raise LookupError(f"no run {run_id}")
    rows, empty = [], 0
    for idea_id, score in session.execute(
            select(Idea.idea_id, JudgeScore).join(JudgeScore, JudgeScore.idea_pk == Idea.pk)
            .where(Idea.run_id == run_id, JudgeScore.judge == judge).order_by(Idea.pk)).all():
        values = {d: getattr(score, d) for d in DIMENSIONS if getattr(score, d) is not None}
        if not values:
            empty += 1
            continue
        rows.append({"idea_id": idea_id, "judge": judge, "system": run.system, "run": run.label, **values})
    return rows, empty


def to_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def invalid_answers(session: Session, *, revision: str, task: str = "rate") -> list[dict]:
    """Every invalid answer of a revision, with its reason."""
    return [{"text_hash": a.text_hash, "question": a.question, "reason": a.reason, "answer": a.answer}
            for a in session.scalars(select(JudgeAnswer).where(JudgeAnswer.revision == revision,
                                                               JudgeAnswer.task == task,
                                                               JudgeAnswer.source == "invalid"))]
