"""Idea generators with a declared knowledge cutoff: declaring, reading and listing them (the scoring window a
request of one gets is service.scoring.plan)."""

from datetime import date

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.db import write_lock
from indexing.errors import DomainError, NotFoundError
from indexing.models import System
from indexing.windows import iso_day


class SystemInputError(DomainError, ValueError):
    """A bad system declaration; names the field."""

    field: str

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)

    def detail(self) -> dict:
        return {"field": self.field, "message": str(self)}


def _day(value: str | date, field: str) -> date:
    try:
        return iso_day(value.strip() if isinstance(value, str) else value)
    except ValueError:
        raise SystemInputError(field, f"{str(value).strip()[:40]!a} is not a date (YYYY-MM-DD)") from None


def as_dict(system: System) -> dict:
    return {"name": system.name, "knowledge_cutoff": system.knowledge_cutoff.isoformat(), "model": system.model,
            "updated_at": system.updated_at.isoformat() if system.updated_at else None}


def set_system(session: Session, *, name: str, knowledge_cutoff: str | date, model: str | None = None) -> dict:
    """Declare (or change) a system's knowledge cutoff; returns the stored declaration."""
    name = (name or "").strip()
    if not name or len(name) > 255 or not _encodable(name):
        raise SystemInputError("name", "a system name is 1..255 characters of valid Unicode")
    if model is not None and not _encodable(model):
        raise SystemInputError("model", "contains invalid Unicode (an unpaired surrogate escape)")
    cutoff = _day(knowledge_cutoff, "knowledge_cutoff")
    write_lock(session)  # two first declarations of one name at once: the second finds the first's row
    row = session.get(System, name)
    if row is None:
        row = System(name=name, knowledge_cutoff=cutoff, model=model)
        session.add(row)
    else:
        row.knowledge_cutoff, row.model = cutoff, model if model is not None else row.model
    session.flush()
    return as_dict(row)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def get_system(session: Session, name: str) -> System | None:
    return session.get(System, name) if _encodable(name) else None


def system_named(session: Session, name: str) -> System:
    """A declared system; 404 saying how to declare it otherwise."""
    found = get_system(session, name)
    if found is None:
        raise NotFoundError(f"no system {name!r} declared; declare it with PUT /v1/systems/{{name}}")
    return found


def list_systems(session: Session) -> list[dict]:
    return [as_dict(s) for s in session.scalars(select(System).order_by(System.name))]


def declared_cutoffs(session: Session) -> dict[str, date]:
    return {s.name: s.knowledge_cutoff for s in session.scalars(select(System))}
