"""An idea's class from its two sides: realised (or direction) after the cutoff, and before it in the look-back
window. The same four classes at realised and at direction level; `unknown` when the index held nothing before the
cutoff, so no idea is ever called new for want of papers."""

from datetime import date

ANTICIPATED = "anticipated"  # after, not before
RECALLED = "recalled"  # both
ALREADY_PUBLISHED = "already_published"  # before, not after
UNREALISED = "unrealised"  # neither
UNKNOWN = "unknown"  # the look-back window held no paper
CLASSES = (ANTICIPATED, RECALLED, ALREADY_PUBLISHED, UNREALISED)
ALL_CLASSES = (*CLASSES, UNKNOWN)
LEVELS = ("realised", "direction")

BEFORE_KNOWLEDGE = "before_knowledge_cutoff"  # the generator could have read it
AFTER_KNOWLEDGE = "after_knowledge_cutoff"  # published between the knowledge cutoff and the scoring cutoff


def class_of(after: bool, before: bool | None) -> str:
    """The class of an idea matched `after` the cutoff and `before` it (None: the look-back side is unknown)."""
    if before is None:
        return UNKNOWN
    if after:
        return RECALLED if before else ANTICIPATED
    return ALREADY_PUBLISHED if before else UNREALISED


def period_of(published: date, knowledge_cutoff: date | None) -> str | None:
    """Where a paper before the scoring cutoff lies against the system's declared knowledge cutoff (None: none
    declared)."""
    if knowledge_cutoff is None:
        return None
    return BEFORE_KNOWLEDGE if published < knowledge_cutoff else AFTER_KNOWLEDGE


def anticipation(score: float, cls: str) -> float | None:
    """The anticipation score of one idea: its HindSight score when anticipated, else 0 (None when unknown)."""
    if cls == UNKNOWN:
        return None
    return float(score) if cls == ANTICIPATED else 0.0
