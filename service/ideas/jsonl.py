"""HindSight's own layout: JSON Lines of {"id", "problem", "method"} or {"id", "text"} (optional "title", "topic")."""

import json

from service.ideas.records import LayoutError, ReadResult, SourceFile
from service.schemas import Origin

NAME = "jsonl"
TEXT_FIELDS = ("problem", "method", "text")


def parse(file: SourceFile, text: str) -> list[tuple[int, object]]:
    """(line number, value) of every non-blank line; LayoutError at the first line that is not JSON."""
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise LayoutError(file.name, "<line>", f"line {number} is not JSON ({exc.msg}); JSON Lines need one "
                                                   "idea object a line") from None
    return rows


def fits(value: object) -> bool:
    return isinstance(value, dict) and "id" in value and any(k in value for k in TEXT_FIELDS)


def read(file: SourceFile, rows: list[tuple[int, object]], result: ReadResult, *, max_chars: int | None) -> None:
    for number, obj in rows:
        record = str(number)
        if not isinstance(obj, dict):
            result.refuse(file, record, "<line>", "expected a JSON object")
            continue
        idea_id = obj.get("id")
        if not isinstance(idea_id, str):
            result.refuse(file, record, "id", "missing" if idea_id is None else "expected a string")
            continue
        bad = next((k for k in TEXT_FIELDS if obj.get(k) is not None and not isinstance(obj[k], str)), None)
        if bad:
            result.refuse(file, record, bad, f"expected a string, got {type(obj[bad]).__name__}")
            continue
        origin = Origin(file=file.name, generator=NAME, topic=_str(obj.get("topic")), title=_str(obj.get("title")))
        result.add(file, record, idea_id=idea_id, origin=origin, max_chars=max_chars,
                   **{k: obj.get(k) for k in TEXT_FIELDS})


def _str(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None
