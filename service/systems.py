"""Idea generators with a declared knowledge cutoff, and the scoring window a request of one gets."""

from dataclasses import dataclass, field
from datetime import date, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.db import write_lock
from indexing.errors import DomainError, NotFoundError
from indexing.models import System
from indexing.versions import LoadedIndex
from indexing.windows import Window, WindowError, WindowImpact, iso_day


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


def leak_warning(system: str, cutoff: date, declared: date, model: str | None = None) -> dict:
    who = f"{system}" + (f" ({model})" if model else "")
    return {"code": "leak_risk",
            "message": f"cutoff {cutoff} is earlier than the knowledge cutoff {declared} declared for {who}: papers "
                       f"published {cutoff}..{declared - timedelta(days=1)} may have been known to the generator, "
                       "so matching them is not foresight"}


@dataclass
class WindowPlan:
    """The effective window of a request, where its cutoff came from, any leak warning, and the window's impacts."""

    window: Window
    cutoff_source: str  # request, system (its declared knowledge cutoff) or index (the built window's start)
    knowledge_cutoff: date | None = None
    warnings: list[dict] = field(default_factory=list)
    impacts: WindowImpact | None = None  # plan_window's: c_hat and impact of the window's papers

    @property
    def leak_risk(self) -> bool:
        return any(w["code"] == "leak_risk" for w in self.warnings)


def plan_window(session: Session, loaded: LoadedIndex, *, system: str, cutoff: str | date | None = None,
                until: str | date | None = None) -> WindowPlan:
    """The window [cutoff, until] a request scores in: cutoff defaults to the system's declared knowledge cutoff,
    else the built one, with the window's impacts; raises WindowError (field, allowed range) for a window the version
    cannot serve."""
    declared = get_system(session, system)
    source = "request" if cutoff is not None else "system" if declared else "index"
    if declared and source == "system":
        cutoff = declared.knowledge_cutoff
    try:
        window = loaded.resolve_window(cutoff, until)
    except WindowError as exc:
        if declared and source == "system" and exc.field == "cutoff":
            raise WindowError("cutoff", f"system {system!r} declares knowledge cutoff {declared.knowledge_cutoff}, "
                                        f"the default cutoff of its runs, but {exc.message}; pass a cutoff inside "
                                        "the built range", exc.allowed, exc.status) from None
        raise
    plan = WindowPlan(window, source, declared.knowledge_cutoff if declared else None,
                      impacts=loaded.window_impacts(window))
    if declared and window.start < declared.knowledge_cutoff:
        plan.warnings.append(leak_warning(system, window.start, declared.knowledge_cutoff, declared.model))
    return plan
