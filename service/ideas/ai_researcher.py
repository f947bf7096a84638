"""AI-Researcher (NoviScl/AI-Researcher): one JSON plan per idea, `raw_idea` (the seed) and/or
`full_experiment_plan` (the proposal); also a seed-ideas file {"ideas": {name: seed}}."""

from dataclasses import dataclass

from service.ideas.records import LayoutError, ReadResult, SourceFile
from service.ideas.text import as_text, joined
from service.schemas import Origin

NAME = "ai-researcher"
FULL, RAW = "full_experiment_plan", "raw_idea"
# a part of an idea -> its key in the proposal, in the seed
PARTS = {"problem": ("Problem Statement", "Problem"), "motivation": ("Motivation", "Motivation"),
         "existing": (None, "Existing Methods"), "method": ("Proposed Method", "Proposed Method"),
         "plan": ("Step-by-Step Experiment Plan", "Experiment Plan")}


@dataclass(frozen=True)
class Mapping:
    """Which block is read first (the other fills what it lacks) and which parts make the problem and the method."""

    block: str
    problem: tuple[str, ...]
    method: tuple[str, ...]


MAPPINGS = {
    "proposal": Mapping(FULL, ("problem",), ("method",)),
    "proposal+motivation": Mapping(FULL, ("problem", "motivation"), ("method",)),
    "proposal+plan": Mapping(FULL, ("problem",), ("method", "plan")),
    "proposal+all": Mapping(FULL, ("problem", "motivation"), ("method", "plan")),
    "seed": Mapping(RAW, ("problem",), ("method",)),
    "seed+motivation": Mapping(RAW, ("problem", "existing", "motivation"), ("method",)),
}
DEFAULT_MAPPING = "proposal+plan"  # measured: docs/generators.md


def fits(value: object) -> bool:
    return isinstance(value, dict) and (FULL in value or RAW in value or _bare(value) is not None
                                        or isinstance(value.get("ideas"), dict))


def is_literature(value: object) -> bool:
    """lit_review/TOPIC.json: the papers the agent retrieved before generating (its knowledge), not ideas."""
    return isinstance(value, dict) and "paper_bank" in value and not fits(value)


def _bare(value: dict) -> str | None:
    """A file that is one block itself."""
    if "Problem Statement" in value and "Proposed Method" in value:
        return FULL
    if "Problem" in value and "Proposed Method" in value:
        return RAW
    return None


def describe(name: str) -> dict:
    """The mapping as the answer names it: block read first, the keys that make problem and method."""
    mapping = MAPPINGS[name]
    keys = {part: PARTS[part][0 if mapping.block == FULL else 1] or PARTS[part][1] for part in PARTS}
    return {"name": name, "block": mapping.block, "problem": [keys[p] for p in mapping.problem],
            "method": [keys[p] for p in mapping.method]}


def read(file: SourceFile, value: object, result: ReadResult, *, mapping: str, max_chars: int | None) -> None:
    if not fits(value):
        raise LayoutError(file.name, FULL, "an AI-Researcher plan is a JSON object with 'full_experiment_plan' "
                                           "and/or 'raw_idea'" + _found(value))
    assert isinstance(value, dict)
    chosen = MAPPINGS[mapping]
    topic = file.topic
    if FULL not in value and RAW not in value and isinstance(value.get("ideas"), dict):
        for name, seed in value["ideas"].items():
            _read_one(file, f"ideas.{name}", {RAW: seed}, result, chosen, idea_id=f"{topic}/{name}" if topic else name,
                      title=name, topic=topic, max_chars=max_chars)
        return
    blocks = value if FULL in value or RAW in value else {_bare(value): value}
    title = as_text(_get(blocks, FULL, "Title")) or as_text(value.get("idea_name")) or None
    _read_one(file, file.stem, blocks, result, chosen, idea_id=f"{topic}/{file.stem}" if topic else file.stem,
              title=title, topic=topic, max_chars=max_chars)


def _read_one(file: SourceFile, record: str, blocks: dict, result: ReadResult, mapping: Mapping, *, idea_id: str,
              title: str | None, topic: str | None, max_chars: int | None) -> None:
    usable = [b for b in (FULL, RAW) if isinstance(blocks.get(b), dict)]
    if not usable:
        present = next((b for b in (FULL, RAW) if b in blocks), FULL)
        result.refuse(file, record, present, f"expected an object of fields, got {type(blocks.get(present)).__name__}")
        return
    order = [mapping.block] + [b for b in (FULL, RAW) if b != mapping.block]

    def part(name: str) -> str:
        for block in order:
            key = PARTS[name][0 if block == FULL else 1]
            text = as_text(_get(blocks, block, key)) if key else ""
            if text:
                return text
        return ""

    method = joined(*(part(p) for p in mapping.method))
    if not part("method"):
        result.refuse(file, record, f"{usable[0]}.Proposed Method", "missing or empty: a plan without a proposed "
                                                                    "method is not an idea")
        return
    origin = Origin(file=file.name, generator=NAME, topic=topic, title=title)
    result.add(file, record, idea_id=idea_id, origin=origin, max_chars=max_chars,
               problem=joined(*(part(p) for p in mapping.problem)) or None, method=method)


def _get(blocks: dict, block: str, key: str) -> object:
    found = blocks.get(block)
    return found.get(key) if isinstance(found, dict) else None


def _found(value: object) -> str:
    if isinstance(value, dict):
        return f"; this one has {', '.join(repr(k) for k in list(value)[:8]) or 'no fields'}"
    return f"; this file holds a JSON {type(value).__name__}"
