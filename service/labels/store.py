"""Labels in and out: a whole-file import validated before anything is written (one transaction), the export that
import reads back, and one label written at a time (the labelling view)."""

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.orm import Session

from indexing.models import Idea, Run, utcnow
from service.labels.draws import LabelError, runs_of
from service.labels.models import DrawIdea, Label
from service.labels.rows import FORMATS, ImportReport, aware, parse_rows
from service.rejections import ImportRejected

__all__ = ["FORMATS", "ImportRejected", "ImportReport", "export_labels", "import_labels", "write_label"]


def _upsert(session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert labels, replacing one another writer stored meanwhile for the same idea, paper and annotator."""
    if rows:
        stmt = insert(Label)
        session.execute(stmt.on_conflict_do_update(index_elements=["idea_pk", "paper_id", "annotator"],
                                                   set_={"label": stmt.excluded.label,
                                                         "updated_at": stmt.excluded.updated_at}), rows)


def import_labels(session: Session, data: bytes, *, name: str, fmt: str = "auto", run: str | None = None,
                  system: str | None = None, annotator: str | None = None) -> ImportReport:
    """Validate the whole file, then upsert every label in one transaction; any fault writes nothing."""
    report = ImportReport(file=name)
    pairs = parse_rows(session, data, fmt=fmt, run=run, system=system, annotator=annotator, report=report)
    if report.errors:
        session.rollback()
        raise ImportRejected(report)
    unique = list({(p.idea_pk, p.paper_id, p.annotator): p for p in pairs}.values())
    pks = sorted({p.idea_pk for p in unique})
    existing: dict[tuple[int, str, str], Label] = {}
    drawn: set[int] = set()
    for start in range(0, len(pks), 500):
        chunk = pks[start:start + 500]
        for lab in session.scalars(select(Label).where(Label.idea_pk.in_(chunk))):
            existing[(lab.idea_pk, lab.paper_id, lab.annotator)] = lab
        drawn |= set(session.scalars(select(DrawIdea.idea_pk).where(DrawIdea.idea_pk.in_(chunk))))
    now = utcnow()
    new: list[dict[str, Any]] = []
    for p in unique:
        old = existing.get((p.idea_pk, p.paper_id, p.annotator))
        if old is None:
            new.append(dict(idea_pk=p.idea_pk, paper_id=p.paper_id, annotator=p.annotator, label=p.label,
                            created_at=p.time or now, updated_at=p.time or now))
            report.inserted += 1
        elif old.label != p.label or (p.time is not None and aware(old.updated_at) != p.time):
            old.label, old.updated_at = p.label, p.time or now
            report.updated += 1
        else:
            report.unchanged += 1
    _upsert(session, new)
    session.commit()
    report.labels = len(unique)
    report.written = True
    report.annotators = sorted({p.annotator for p in unique})
    report.ideas = len(pks)
    report.ideas_outside_draws = len(set(pks) - drawn)
    return report


def export_labels(session: Session, *, run: str, system: str | None = None) -> list[dict]:
    """Every label of the run's ideas as the JSONL rows import reads (with each label's time)."""
    strata = {r.id: r for r in runs_of(session, run, system)}
    rows = session.execute(select(Label, Idea.idea_id, Idea.run_id).join(Idea, Idea.pk == Label.idea_pk)
                           .where(Idea.run_id.in_(list(strata)))
                           .order_by(Idea.run_id, Idea.idea_id, Label.annotator, Label.paper_id)).all()
    out = []
    for lab, idea_id, run_id in rows:
        stratum: Run = strata[run_id]
        when = aware(lab.updated_at)
        out.append({"run": stratum.label, "system": stratum.system, "idea_id": idea_id, "paper_id": lab.paper_id,
                    "label": lab.label, "annotator": lab.annotator, "time": when.isoformat()})
    return out


def write_label(session: Session, *, run: str, idea_id: str, paper_id: str, label: str, annotator: str,
                system: str | None = None) -> dict[str, Any]:
    """Write one label at once (insert or replace, atomic in SQLite), so a closed tab loses nothing."""
    report = ImportReport(file="label")
    row = {"run": run, "idea_id": idea_id, "paper_id": paper_id, "label": label, "annotator": annotator}
    if system is not None:
        row["system"] = system
    pairs = parse_rows(session, json.dumps(row).encode(), fmt="labels", run=None, system=None, annotator=None,
                   report=report)
    if report.errors:
        e = report.errors[0]
        raise LabelError(e.field, e.message, 404 if e.field in ("run", "idea_id", "paper_id") else 422)
    p = pairs[0]
    now = utcnow()
    _upsert(session, [dict(idea_pk=p.idea_pk, paper_id=p.paper_id, annotator=p.annotator, label=p.label,
                           created_at=now, updated_at=now)])
    session.commit()
    return {"idea_pk": p.idea_pk, "idea_id": idea_id, "paper_id": p.paper_id, "annotator": p.annotator,
            "label": p.label, "time": now.isoformat()}
