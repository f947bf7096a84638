"""Judge scores from outside HindSight (a file of another tool's ratings per idea, or a generator's own): import
them (validate a whole file first, then upsert it in one transaction) and list the judges. The LLM judge that runs
here is service.llm_judge."""

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Literal, get_args

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from indexing.db import write_lock
from indexing.models import Idea, JudgeScore, Run
from service.rejections import ImportRejected, ImportReportBase, RowError

# interestingness and novel: the dimensions AI-Scientist rates its own ideas on (novel: its novelty check, 1 or 0)
DimensionName = Literal["novelty", "feasibility", "impact", "overall", "interestingness", "novel"]
DIMENSIONS: tuple[DimensionName, ...] = get_args(DimensionName)
KNOWN_FIELDS = {"idea_id", "judge", "system", "run", *DIMENSIONS}


@dataclass
class JudgeImportReport(ImportReportBase):
    file: str
    format: str = ""
    rows: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    written: bool = False
    judges: list[str] = field(default_factory=list)
    dimensions: list[str] = field(default_factory=list)
    ignored_fields: list[str] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)



@dataclass
class _Row:
    line: int
    idea_pk: int
    judge: str
    values: dict[str, float]


def _parse_rows(data: bytes, name: str, fmt: str, report: JudgeImportReport) -> list[tuple[int, dict]]:
    """(line number, raw fields) for every non-blank row; format errors go into the report."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        report.errors.append(RowError(1, "<file>", f"not UTF-8 text ({exc.reason} at byte {exc.start})"))
        return []
    if fmt == "auto":
        first = text.lstrip()[:1]
        fmt = "jsonl" if name.lower().endswith((".jsonl", ".json", ".ndjson")) or first == "{" else "csv"
    report.format = fmt
    rows: list[tuple[int, dict]] = []
    if fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                report.errors.append(RowError(number, "<line>", f"invalid JSON: {exc.msg}"))
                continue
            if not isinstance(obj, dict):
                report.errors.append(RowError(number, "<line>", "expected a JSON object"))
                continue
            rows.append((number, obj))
        return rows
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header or not any(h.strip() for h in header):
        report.errors.append(RowError(1, "<header>", "empty file: expected a header line"))
        return []
    header = [h.strip() for h in header]
    for missing in ("idea_id", "judge"):
        if missing not in header:
            report.errors.append(RowError(1, missing, "column missing from the header"))
    if not any(d in header for d in DIMENSIONS):
        report.errors.append(RowError(1, "<header>", f"no score column: expected any of {', '.join(DIMENSIONS)}"))
    if report.errors:
        return []
    for values in reader:
        number = reader.line_num
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            report.errors.append(RowError(number, "<line>", f"{len(values)} fields, the header has {len(header)}"))
            continue
        rows.append((number, {h: v for h, v in zip(header, values)}))
    return rows


def number_of(value) -> float | None:
    """A finite float, None when absent; ValueError otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {json.dumps(value)}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"expected a finite number, got {value!r}")
    return number


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else "" if value is None else str(value).strip()


def _idea_index(session: Session) -> dict[str, list[tuple[int, str, str]]]:
    """idea_id -> [(idea pk, system, run label)] over every stored run."""
    index: dict[str, list[tuple[int, str, str]]] = {}
    for pk, idea_id, system, label in session.execute(
            select(Idea.pk, Idea.idea_id, Run.system, Run.label).join(Run, Run.id == Idea.run_id)):
        index.setdefault(idea_id, []).append((pk, system, label))
    return index


def validate_judge_file(session: Session, data: bytes, *, name: str, fmt: str = "auto", system: str | None = None,
                        run: str | None = None) -> tuple[JudgeImportReport, list[_Row]]:
    """Parse, resolve and check every row without writing; errors are collected with their line numbers."""
    report = JudgeImportReport(file=name)
    raw = _parse_rows(data, name, fmt, report)
    report.rows = len(raw)
    if not raw and not report.errors:
        report.errors.append(RowError(1, "<file>", "no rows"))
    ideas = _idea_index(session)
    seen: dict[tuple, int] = {}
    rows: list[_Row] = []
    judges: set[str] = set()
    dims: set[str] = set()
    ignored: set[str] = set()
    for number, obj in raw:
        ignored.update(k for k in obj if k not in KNOWN_FIELDS)
        errors: list[RowError] = []
        idea_id, judge = _text(obj.get("idea_id")), _text(obj.get("judge"))
        if not idea_id:
            errors.append(RowError(number, "idea_id", "missing"))
        if not judge:
            errors.append(RowError(number, "judge", "missing"))
        values: dict[str, float] = {}
        for dim in DIMENSIONS:
            try:
                value = number_of(obj.get(dim))
            except ValueError as exc:
                errors.append(RowError(number, dim, str(exc)))
                continue
            if value is not None:
                values[dim] = value
        if not values and not any(e.field in DIMENSIONS for e in errors):
            errors.append(RowError(number, "<line>", f"no score: give any of {', '.join(DIMENSIONS)}"))
        row_system, row_run = _text(obj.get("system")) or system, _text(obj.get("run")) or run
        idea_pk = None
        if idea_id:
            candidates = [c for c in ideas.get(idea_id, [])
                          if (not row_system or c[1] == row_system) and (not row_run or c[2] == row_run)]
            scope = "".join(f" {k} {v!r}" for k, v in (("system", row_system), ("run", row_run)) if v)
            if not candidates:
                errors.append(RowError(number, "idea_id", f"unknown idea id {idea_id!r}"
                                            + (f" in{scope}" if scope else "") + " (score the ideas first)"))
            elif len(candidates) > 1:
                where = ", ".join(f"{s}/{r}" for _, s, r in candidates)
                errors.append(RowError(number, "idea_id", f"idea id {idea_id!r} is ambiguous: it exists in runs "
                                            f"{where}; add a 'system' and/or 'run' column or option"))
            else:
                idea_pk = candidates[0][0]
        if idea_id and judge:
            key = (idea_pk if idea_pk is not None else (row_system, row_run, idea_id), judge)
            if key in seen:
                errors.append(RowError(number, "idea_id", f"duplicate: idea {idea_id!r} with judge {judge!r} "
                                            f"is already on line {seen[key]}"))
            else:
                seen[key] = number
        if errors or idea_pk is None or not judge:  # without an error, both are set
            report.errors.extend(errors)
            continue
        judges.add(judge)
        dims.update(values)
        rows.append(_Row(number, idea_pk, judge, values))
    report.judges, report.dimensions = sorted(judges), [d for d in DIMENSIONS if d in dims]
    report.ignored_fields = sorted(ignored)
    return report, rows


def import_judge_scores(session: Session, data: bytes, *, name: str, fmt: str = "auto", system: str | None = None,
                        run: str | None = None) -> JudgeImportReport:
    """Validate the whole file, then upsert: a row replaces the dimensions it gives and keeps the others."""
    report, rows = validate_judge_file(session, data, name=name, fmt=fmt, system=system, run=run)
    if report.errors:
        raise ImportRejected(report)
    write_lock(session)  # a file imported twice at once: the second finds the first's rows and updates them
    existing = {(j.idea_pk, j.judge): j for j in session.scalars(
        select(JudgeScore).where(JudgeScore.idea_pk.in_({r.idea_pk for r in rows})))}
    for row in rows:
        current = existing.get((row.idea_pk, row.judge))
        if current is None:
            session.add(JudgeScore(idea_pk=row.idea_pk, judge=row.judge, **row.values))
            report.inserted += 1
        elif all(getattr(current, k) == v for k, v in row.values.items()):
            report.unchanged += 1
        else:
            for k, v in row.values.items():
                setattr(current, k, v)
            report.updated += 1
    session.flush()
    report.written = True
    return report


def store_ratings(session: Session, *, run_id: int, ratings: dict[str, tuple[str, dict[str, float]]]) -> dict:
    """A generator's own ratings of its ideas (idea id -> (judge, dimension values)) stored as judge scores of the
    run's ideas: a rating replaces the dimensions it gives and keeps the others."""
    pks = dict(session.execute(select(Idea.idea_id, Idea.pk).where(
        Idea.run_id == run_id, Idea.idea_id.in_(list(ratings)))).all())
    existing = {(j.idea_pk, j.judge): j for j in session.scalars(
        select(JudgeScore).where(JudgeScore.idea_pk.in_(list(pks.values()))))}
    counts = {"inserted": 0, "updated": 0, "unchanged": 0}
    judges: set[str] = set()
    dims: set[str] = set()
    for idea_id, (judge, values) in ratings.items():
        judges.add(judge)
        dims.update(values)
        current = existing.get((pks[idea_id], judge))
        if current is None:
            session.add(JudgeScore(idea_pk=pks[idea_id], judge=judge, **values))
            counts["inserted"] += 1
        elif all(getattr(current, k) == v for k, v in values.items()):
            counts["unchanged"] += 1
        else:
            for k, v in values.items():
                setattr(current, k, v)
            counts["updated"] += 1
    session.flush()
    return {"judges": sorted(judges), "ideas": len(ratings), **counts,
            "dimensions": [d for d in DIMENSIONS if d in dims]}


def list_judges(session: Session) -> list[dict]:
    """Every judge with the number of ideas it scored, in total and per dimension."""
    counts = [func.count(getattr(JudgeScore, d)) for d in DIMENSIONS]
    rows = session.execute(select(JudgeScore.judge, func.count(), *counts)
                           .group_by(JudgeScore.judge).order_by(JudgeScore.judge)).all()
    return [{"judge": judge, "ideas": n, "dimensions": dict(zip(DIMENSIONS, per_dim))}
            for judge, n, *per_dim in rows]
