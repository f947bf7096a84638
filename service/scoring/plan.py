"""The scoring window a request gets: its cutoff (the request's, else the system's declared knowledge cutoff, else
the built one), a leak warning when it starts before the declared knowledge cutoff, and the window's impacts."""

from dataclasses import dataclass, field
from datetime import date, timedelta

from sqlalchemy.orm import Session

from indexing.versions import LoadedIndex
from indexing.windows import Window, WindowError, WindowImpact
from service.systems import get_system


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
