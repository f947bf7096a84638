"""An idea's class from its two sides: realised (or direction) after the cutoff, and before it in the look-back
window. The same four classes at realised and at direction level; `unknown` when the index held nothing before the
cutoff, so no idea is ever called new for want of papers."""

from collections.abc import Sequence
from datetime import date
from typing import Any, Literal, Protocol, TypeVar

ANTICIPATED = "anticipated"  # after, not before
RECALLED = "recalled"  # both
ALREADY_PUBLISHED = "already_published"  # before, not after
UNREALISED = "unrealised"  # neither
UNKNOWN = "unknown"  # the look-back window held no paper
CLASSES = (ANTICIPATED, RECALLED, ALREADY_PUBLISHED, UNREALISED)
ALL_CLASSES = (*CLASSES, UNKNOWN)
LEVELS = ("realised", "direction")

Day = TypeVar("Day", date, str)  # a date, or its ISO text
Period = Literal["before_knowledge_cutoff", "after_knowledge_cutoff"]
BEFORE_KNOWLEDGE: Period = "before_knowledge_cutoff"  # the generator could have read it
AFTER_KNOWLEDGE: Period = "after_knowledge_cutoff"  # published between the knowledge cutoff and the scoring cutoff


def class_of(after: bool, before: bool | None) -> str:
    """The class of an idea matched `after` the cutoff and `before` it (None: the look-back side is unknown)."""
    if before is None:
        return UNKNOWN
    if after:
        return RECALLED if before else ANTICIPATED
    return ALREADY_PUBLISHED if before else UNREALISED


def period_of(published: Day, knowledge_cutoff: Day | None) -> Period | None:
    """Where a paper before the scoring cutoff lies against the system's declared knowledge cutoff (None: none
    declared); both dates, or both ISO strings, which compare alike."""
    if knowledge_cutoff is None:
        return None
    return BEFORE_KNOWLEDGE if published < knowledge_cutoff else AFTER_KNOWLEDGE


def anticipation(score: float, cls: str) -> float | None:
    """The anticipation score of one idea: its HindSight score when anticipated, else 0 (None when unknown)."""
    if cls == UNKNOWN:
        return None
    return float(score) if cls == ANTICIPATED else 0.0


class Decided(Protocol):
    """A look-back match as decided (a live PriorArtMatchOut or a stored PriorArtMatch)."""

    @property
    def realised(self) -> bool: ...
    @property
    def direction(self) -> bool: ...
    @property
    def period(self) -> str | None: ...


class ForwardSide(Protocol):
    """A forward side as scored (a live IdeaScoreOut or a stored Score)."""

    @property
    def matched(self) -> bool: ...
    @property
    def n_direction_matches(self) -> int | None: ...


def after_levels(forward: ForwardSide) -> tuple[bool, bool]:
    """Whether the forward side realised the idea, and matched its direction (dense: one decision for both)."""
    realised = bool(forward.matched)
    if forward.n_direction_matches is None:
        return realised, realised
    return realised, forward.n_direction_matches > 0


def summary(matches: Sequence[Decided], forward: ForwardSide, *, knowledge_declared: bool) -> dict[str, Any]:
    """A known look-back side's summary from its matches, and the idea's classes from it and the forward side: the
    one place both the scoring request and a re-verified stored run decide them."""
    after_r, after_d = after_levels(forward)
    hits = [m for m in matches if m.realised]
    n_direction = sum(bool(m.direction) for m in matches)
    return dict(class_realised=class_of(after_r, bool(hits)), class_direction=class_of(after_d, n_direction > 0),
                realised_before=bool(hits), direction_before=n_direction > 0, n_realised=len(hits),
                n_direction=n_direction,
                n_realised_before_knowledge=sum(m.period == BEFORE_KNOWLEDGE for m in hits)
                if knowledge_declared else None,
                n_realised_after_knowledge=sum(m.period == AFTER_KNOWLEDGE for m in hits)
                if knowledge_declared else None)
