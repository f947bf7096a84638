"""The judge's revisions and answers in SQLite. An answer is keyed by (revision, task, text hash, question), so a
second run, or a run over a superset, asks nothing it has asked; each put is its own transaction, so a killed run
keeps what it had."""

import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from statistics import fmean

from sqlalchemy import select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.orm import Session

from indexing.db import session_scope, write_transaction
from indexing.models import JudgeAnswer, JudgeRevision, utcnow
from service.llm_judge.backends import Judge, Reading
from service.llm_judge.prompts import PromptVersion

MAX_ANSWER_CHARS = 300


def text_hash(*texts: str) -> str:
    """The hash of a text, or of texts in the order shown."""
    return hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()


def decoding_of(samples: int) -> str:
    return "t0-expected" if samples == 1 else f"t1-sample{samples}"


def revision_of(judge: Judge, prompt: PromptVersion, samples: int) -> str:
    """Backend, weights, prompt version and the hash of its texts, decoding: any change is a new revision."""
    return f"{judge.backend}:{judge.weights}:{prompt.name}.{prompt.sha}:{decoding_of(samples)}"


def register(db_path: Path, judge: Judge, prompt: PromptVersion, samples: int) -> tuple[str, str]:
    """(stored name, revision) of this judge: model@prompt (+sN when sampled); a name another revision holds gets
    the revision's short hash after '#'."""
    revision = revision_of(judge, prompt, samples)
    name = f"{judge.model}@{prompt.name}" + ("" if samples == 1 else f"+s{samples}")

    def work(session: Session) -> str:
        known = session.scalars(select(JudgeRevision).where(JudgeRevision.revision == revision)).first()
        if known is not None:
            return known.name
        chosen = name
        if session.get(JudgeRevision, chosen) is not None:
            chosen = f"{name}#{hashlib.sha256(revision.encode()).hexdigest()[:6]}"
        session.add(JudgeRevision(name=chosen, revision=revision, backend=judge.backend, model=judge.model,
                                  weights=judge.weights, prompt=prompt.name, prompt_sha=prompt.sha,
                                  decoding=decoding_of(samples), created_at=utcnow()))
        return chosen

    return write_transaction(db_path, work), revision


def revisions(session: Session, names: Sequence[str] | None = None) -> dict[str, dict]:
    """Stored name -> what it stands for."""
    query = select(JudgeRevision).order_by(JudgeRevision.name)
    if names is not None:
        query = query.where(JudgeRevision.name.in_(list(names)))
    return {r.name: {"name": r.name, "revision": r.revision, "backend": r.backend, "model": r.model,
                     "weights": r.weights, "prompt": r.prompt, "prompt_sha": r.prompt_sha, "decoding": r.decoding}
            for r in session.scalars(query)}


def value_of(task: str, reading: Reading) -> float | None:
    """A rating's number: the mean of the readable samples, the expected rating over the probabilities, or the
    parsed one; None when invalid (and for the tasks that choose a label)."""
    if task != "rate" or reading.label is None:
        return None
    if reading.source == "sampled" and reading.samples:
        return fmean(int(s) for s in reading.samples if s is not None)
    if reading.source == "logprobs" and reading.probs:
        return sum(int(label) * p for label, p in reading.probs.items())
    return float(reading.label)


class AnswerCache:
    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path

    def get(self, revision: str, task: str, key: str) -> dict[str, JudgeAnswer]:
        """question -> stored answer."""
        with session_scope(self.db_path) as session:
            rows = session.scalars(select(JudgeAnswer).where(
                JudgeAnswer.revision == revision, JudgeAnswer.task == task, JudgeAnswer.text_hash == key)).all()
            session.expunge_all()
            return {r.question: r for r in rows}

    def answer(self, revision: str, task: str, key: str, question: str,
               ask: Callable[[], Reading]) -> tuple[JudgeAnswer, bool]:
        """The stored answer to one question, asked and stored first when there is none; and whether it was asked."""
        have = self.get(revision, task, key)
        if question in have:
            return have[question], False
        self.put(revision, task, key, {question: ask()})
        return self.get(revision, task, key)[question], True

    def put(self, revision: str, task: str, key: str, readings: Mapping[str, Reading]) -> None:
        if not readings:
            return
        now = utcnow()

        def work(session: Session) -> None:
            stmt = insert(JudgeAnswer).values([
                {"revision": revision, "task": task, "text_hash": key, "question": q, "label": r.label,
                 "value": value_of(task, r), "mass": r.mass, "source": r.source,
                 "probs": ({**(r.probs or {}), **({"samples": list(r.samples)} if r.samples else {})}
                           if r.probs or r.samples else None),
                 "answer": r.text[:MAX_ANSWER_CHARS] if r.text is not None else None, "reason": r.reason,
                 "created_at": now} for q, r in readings.items()])
            session.execute(stmt.on_conflict_do_update(
                index_elements=["revision", "task", "text_hash", "question"],
                set_={c: getattr(stmt.excluded, c) for c in ("label", "value", "probs", "mass", "source", "answer",
                                                             "reason", "created_at")}))

        write_transaction(self.db_path, work)
