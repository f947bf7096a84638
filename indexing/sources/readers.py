"""Low-level readers: JSONL, JSON (array or object) and CSV, each yielding (line number, object or error)."""

import csv
import io
import json
from collections.abc import Iterator

from indexing.sources.errors import FileInvalid, RowError

Row = tuple[int, dict | RowError]


def decode(data: bytes, name: str) -> str:
    """UTF-8 (a BOM is allowed); a bad byte is reported with its line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FileInvalid(RowError(name, line, "<file>", f"is not UTF-8 text (byte {exc.start}: {exc.reason})"))


def _loads(text: str):
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def read_jsonl(text: str, name: str) -> Iterator[Row]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = _loads(line)
        except ValueError as exc:
            yield number, RowError(name, number, "<json>", f"broken JSON: {exc}")
            continue
        if not isinstance(obj, dict):
            yield number, RowError(name, number, "<json>", f"expected an object, got {type(obj).__name__}")
            continue
        yield number, obj


def read_json_records(text: str, name: str, *, container_keys: tuple[str, ...] = ("data",)) -> Iterator[Row]:
    """A top-level array of objects (each with the line it starts on), a single object, or {"data": [...]}."""
    decoder = json.JSONDecoder()
    pos = _skip_ws(text, 0)
    if pos >= len(text):
        raise FileInvalid(RowError(name, 1, "<file>", "is empty"))
    if text[pos] != "[":
        try:
            obj = _loads(text)
        except ValueError as exc:
            raise FileInvalid(RowError(name, getattr(exc, "lineno", 1), "<json>", f"broken JSON: {exc}")) from None
        if not isinstance(obj, dict):
            raise FileInvalid(RowError(name, 1, "<json>", f"expected an array or object, got {type(obj).__name__}"))
        for key in container_keys:
            if isinstance(obj.get(key), list):
                for i, item in enumerate(obj[key], start=1):
                    yield (i, item) if isinstance(item, dict) else (
                        i, RowError(name, i, "<json>", f"item {i} of '{key}' is not an object"))
                return
        yield text[:pos].count("\n") + 1, obj
        return
    pos = _skip_ws(text, pos + 1)
    while pos < len(text) and text[pos] != "]":
        line = text.count("\n", 0, pos) + 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            raise FileInvalid(RowError(name, line, "<json>", f"broken JSON in the record starting here: {exc}")) from None
        yield (line, obj) if isinstance(obj, dict) else (
            line, RowError(name, line, "<json>", f"expected an object, got {type(obj).__name__}"))
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
        elif pos < len(text) and text[pos] != "]":
            line = text.count("\n", 0, pos) + 1
            raise FileInvalid(RowError(name, line, "<json>", "broken JSON: expected ',' or ']' between records"))
    if pos >= len(text):
        raise FileInvalid(RowError(name, text.count("\n") + 1, "<json>", "broken JSON: the array is not closed"))
    if text[pos + 1:].strip():
        raise FileInvalid(RowError(name, text.count("\n", 0, pos) + 1, "<json>", "extra data after the array"))


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def read_csv(text: str, name: str) -> Iterator[Row]:
    reader = csv.DictReader(io.StringIO(text, newline=""), restkey="__extra__", strict=True)
    try:
        if not reader.fieldnames:
            raise FileInvalid(RowError(name, 1, "<header>", "the CSV file has no header row"))
        for row in reader:
            if "__extra__" in row:
                yield reader.line_num, RowError(name, reader.line_num, "<row>", "has more cells than the header")
                continue
            yield reader.line_num, {k: v for k, v in row.items() if k is not None}
    except csv.Error as exc:
        raise FileInvalid(RowError(name, reader.line_num, "<csv>", f"malformed CSV: {exc}")) from None
