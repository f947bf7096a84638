"""Labels suggested by a model: the labelling question asked of each candidate of a draw's sheet through the judge's
backends (the shared LLM runtime: the packaged model or an OpenAI-compatible endpoint) and their answer cache, and
stored as the model's own annotator, never as a person's; its agreement with people is measured like any two
annotators'."""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select

from indexing.db import session_scope, write_transaction
from indexing.llm import ModelUnavailable
from indexing.models import JudgeRevision, utcnow
from service.analyses.selection import Selection
from service.llm_judge import prompts
from service.llm_judge.backends import Judge
from service.llm_judge.cache import AnswerCache, text_hash
from service.labels.draws import LabelError
from service.labels.models import Draw, Label
from service.labels.sheets import sheet_rows
from service.labels.store import import_labels

VERSION = "label-v1"
CHOICES = {"1": "realised", "2": "direction", "3": "none"}
# the reader's two decisions as docs/labels.md and the labelling view state them
SYSTEM = ("You are an expert reviewer of research in machine learning and natural language processing. You read a "
          "research idea and a published paper and decide how the paper relates to the idea:\n"
          "1 = realised: the paper works on the idea's concrete problem AND its core mechanism is the idea's method "
          "(details, datasets and names may differ);\n"
          "2 = direction: the paper works on the idea's concrete problem, by other means;\n"
          "3 = none: neither. A paper with the same method on another problem is not a realisation, and a shared "
          "broad area (\"LLM safety\", \"bias\") is not a shared problem.\n"
          "Answer with the number only.")
QUESTION = "Which of 1, 2 or 3 describes this paper?"
TASK = prompts.Task("label", SYSTEM, tuple(CHOICES))
SHA = hashlib.sha256(json.dumps([SYSTEM, QUESTION]).encode()).hexdigest()[:10]


@dataclass
class Suggestion:
    """What a suggestion run did: rows = labelled + invalid + left (stopped before them)."""

    annotator: str
    revision: str
    backend: str
    draws: list[int]
    candidates: int
    rows: int = 0
    labelled: int = 0
    invalid: int = 0
    left: int = 0
    new_calls: int = 0
    cached: int = 0
    ideas: int = 0
    labels: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CHOICES.values(), 0))
    stopped: str | None = None
    agreement: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def revision_of(judge: Judge) -> str:
    return f"{judge.backend}:{judge.weights}:{VERSION}.{SHA}:t0-expected"


def _claim(db_path: Path, judge: Judge, annotator: str) -> None:
    """Register the annotator as this model's; refuse a name a person labels under or another model holds."""
    revision = revision_of(judge)

    def work(session) -> None:
        held = session.get(JudgeRevision, annotator)
        if held is not None and held.revision != revision:
            raise LabelError("annotator", f"{annotator!r} is the annotator of another model ({held.revision}): "
                                          "choose another name")
        if held is None:
            if session.scalars(select(Label.id).where(Label.annotator == annotator).limit(1)).first() is not None:
                raise LabelError("annotator", f"{annotator!r} holds labels a person wrote: a model's labels are "
                                              "never stored as a person's; choose another name")
            session.add(JudgeRevision(name=annotator, revision=revision, backend=judge.backend, model=judge.model,
                                      weights=judge.weights, prompt=VERSION, prompt_sha=SHA, decoding="t0-expected",
                                      created_at=utcnow()))

    write_transaction(db_path, work)


def suggest(db_path: Path, *, draws: list[int], judge: Judge, candidates: int, annotator: str | None = None,
            progress: Callable[[int, int], None] | None = None) -> Suggestion:
    """Ask the model about every row of the draws' sheet (answers cached by revision and texts: a rerun asks
    nothing twice), then store its readable answers as the annotator's labels in one import; an unreadable
    answer leaves its row unlabelled and is counted."""
    with session_scope(db_path) as session:
        rows = sheet_rows(session, draws=draws, candidates=candidates)
    name = annotator or f"{judge.model}@{VERSION}"
    _claim(db_path, judge, name)
    report = Suggestion(annotator=name, revision=revision_of(judge), backend=judge.backend, draws=list(draws),
                        candidates=candidates, rows=len(rows))
    cache = AnswerCache(db_path)
    filled = []
    for done, row in enumerate(rows, start=1):
        idea = prompts.idea_block(row["problem"] or None, row["method"] or None, row["text"] or None)
        paper = prompts.paper_text(row["title"], row["abstract"])
        key = text_hash(idea, paper)
        before = judge.calls
        try:
            answer, asked = cache.answer(report.revision, TASK.name, key, QUESTION, lambda: judge.ask(
                TASK, f"Research idea:\n{idea}\n\n{prompts.paper_prefix(paper)}", [QUESTION], seed=key)[0])
        except ModelUnavailable as exc:
            report.stopped, report.left = str(exc), len(rows) - done + 1
            break
        report.new_calls += judge.calls - before
        report.cached += not asked
        if answer.label not in CHOICES:
            report.invalid += 1
        else:
            label = CHOICES[answer.label]
            report.labels[label] += 1
            filled.append({"draw": row["draw"], "idea_id": row["idea_id"], "side": row["side"],
                           "paper_id": row["paper_id"], "label": label, "annotator": name})
        if progress:
            progress(done, len(rows))
    report.labelled = len(filled)
    if filled:
        with session_scope(db_path) as session:
            written = import_labels(session, "".join(json.dumps(r) + "\n" for r in filled).encode(),
                                    name=f"suggested by {name}", fmt="sheet")
            report.ideas = written.ideas
            report.agreement = agreement_of(session, draws=draws, annotator=name, shown=candidates)
    return report


def agreement_of(session, *, draws: list[int], annotator: str, shown: int) -> list[dict]:
    """The annotator's agreement with every other annotator of the draws' runs (Cohen's kappa), as
    `analyze systems --labels` measures any two."""
    from service.labels.estimates import labelled_summary  # numpy-heavy: only once labels are written

    runs = tuple(sorted({row.run_id for row in session.scalars(select(Draw).where(Draw.id.in_(draws)))}))
    summary = labelled_summary(session, selection=Selection(runs=runs, pool_windows=True), annotator=annotator,
                               shown=shown)
    return [k for k in summary["agreement"]["annotators"] if annotator in (k["a"], k["b"])]
