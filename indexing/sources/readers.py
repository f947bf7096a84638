"""Low-level readers: JSONL, JSON documents (an array, objects one after another, an API page) and CSV, each
yielding (position, object or error). A position names the record's index in the file as well as its line (and,
in a JSON document, its column), so records that share a line (a one-line array, an API page) stay distinct."""

import csv
import io
import json
from collections.abc import Iterator

from indexing.sources.errors import FileInvalid, Position, RowError

Row = tuple[Position, dict | RowError]
_decoder = json.JSONDecoder()


def decode(data: bytes, name: str) -> str:
    """UTF-8 (a BOM is allowed); a bad byte is reported with its line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        reason = f"is not UTF-8 text (byte {exc.start}: {exc.reason})"
        raise FileInvalid(RowError(name, line, "<file>", reason)) from None


def _loads(text: str):
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


class _Lines:
    """Line and column of increasing offsets in one text, in linear time overall. The column is None when only
    whitespace precedes the offset on its line: the line alone names the record."""

    def __init__(self, text: str) -> None:
        self.text, self.offset, self.line, self.line_start = text, 0, 1, 0

    def at(self, offset: int) -> tuple[int, int | None]:
        if offset < self.offset:  # rare (an error after a look-back): count from the start
            self.offset, self.line, self.line_start = 0, 1, 0
        self.line += self.text.count("\n", self.offset, offset)
        last = self.text.rfind("\n", self.offset, offset)
        if last >= 0:
            self.line_start = last + 1
        self.offset = offset
        before = offset - 1
        while before >= self.line_start and self.text[before] in " \t\r":
            before -= 1
        if before < self.line_start:
            return self.line, None
        return self.line, offset - self.line_start + 1


def read_jsonl(text: str, name: str) -> Iterator[Row]:
    record = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record += 1
        pos = Position(record, number)
        try:
            obj = _loads(line)
        except ValueError as exc:
            yield pos, RowError.at(name, pos, "<json>", f"broken JSON: {exc}")
            continue
        if not isinstance(obj, dict):
            yield pos, RowError.at(name, pos, "<json>", f"expected an object, got {type(obj).__name__}")
            continue
        yield pos, obj


def looks_like_jsonl(text: str) -> bool:
    """One JSON value per line with more after the first: JSONL. A single document (an array, one object, an API
    page, however it is laid out) or objects pretty-printed one after another are read as JSON instead."""
    start = _skip_ws(text, 0)
    if start >= len(text):
        return True  # blank: "has no records"
    if text[start] == "[":
        return False
    try:
        _, end = _decoder.raw_decode(text, start)
    except (ValueError, RecursionError):
        return True  # broken: the line reader names the line and keeps reading the others
    return "\n" not in text[start:end] and bool(text[end:].strip())


def read_json_records(text: str, name: str, *, container_keys: tuple[str, ...] = ("data",)) -> Iterator[Row]:
    """A top-level array of objects, objects one after another, a single object, or an API page holding its
    records in one of `container_keys` ({"data": [...]}, {"results": [...]})."""
    lines = _Lines(text)
    pos = _skip_ws(text, 0)
    if pos >= len(text):
        raise FileInvalid(RowError(name, 1, "<file>", "is empty"))
    if text[pos] == "[":
        end = yield from _array_items(text, pos, name, lines, "record")
        if text[end:].strip():
            raise FileInvalid(RowError(name, lines.at(end)[0], "<json>", "extra data after the array"))
        return
    values: list[tuple[int, object]] = []
    while pos < len(text):
        try:
            obj, end = _decoder.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            line, column = lines.at(pos)
            raise FileInvalid(RowError(name, line, "<json>", f"broken JSON in the value starting here: {_reason(exc)}",
                                       record=len(values) + 1, column=column)) from None
        values.append((pos, obj))
        pos = _skip_ws(text, end)
    if len(values) == 1 and isinstance(values[0][1], dict):
        page = values[0][1]
        key = next((k for k in container_keys if isinstance(page.get(k), list)), None)
        if key is not None:
            yield from _array_items(text, _member_offset(text, values[0][0], key), name, lines, f"item of '{key}'")
            return
    for index, (offset, obj) in enumerate(values, start=1):
        at = Position(index, *lines.at(offset))
        yield (at, obj) if isinstance(obj, dict) else (
            at, RowError.at(name, at, "<json>", f"expected an object, got {type(obj).__name__}"))


def _reason(exc: Exception) -> str:
    return "JSON nested too deeply" if isinstance(exc, RecursionError) else getattr(exc, "msg", str(exc))


def _array_items(text: str, pos: int, name: str, lines: _Lines, what: str):
    """Yield (position, object) for each item of the array opening at text[pos]; return the offset after it."""
    pos = _skip_ws(text, pos + 1)
    index = 0
    while pos < len(text) and text[pos] != "]":
        index += 1
        at = Position(index, *lines.at(pos))
        try:
            obj, pos = _decoder.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            raise FileInvalid(RowError.at(name, at, "<json>", f"broken JSON in the {what} starting here: "
                                                              f"{_reason(exc)}")) from None
        yield (at, obj) if isinstance(obj, dict) else (
            at, RowError.at(name, at, "<json>", f"expected an object, got {type(obj).__name__}"))
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
        elif pos < len(text) and text[pos] != "]":
            line, column = lines.at(pos)
            raise FileInvalid(RowError(name, line, "<json>", "broken JSON: expected ',' or ']' between records",
                                       column=column))
    if pos >= len(text):
        raise FileInvalid(RowError(name, text.count("\n") + 1, "<json>", "broken JSON: the array is not closed"))
    return pos + 1


def _member_offset(text: str, pos: int, key: str) -> int:
    """Offset of the value of top-level member `key` in the (valid) JSON object opening at text[pos]."""
    pos = _skip_ws(text, pos + 1)
    while True:
        name, pos = _decoder.raw_decode(text, pos)
        pos = _skip_ws(text, _skip_ws(text, pos) + 1)  # past the ':'
        if name == key:
            return pos
        _, pos = _decoder.raw_decode(text, pos)
        pos = _skip_ws(text, _skip_ws(text, pos) + 1)  # past the ','


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def read_csv(text: str, name: str) -> Iterator[Row]:
    reader = csv.DictReader(io.StringIO(text, newline=""), restkey="__extra__", strict=True)
    try:
        if not reader.fieldnames:
            raise FileInvalid(RowError(name, 1, "<header>", "the CSV file has no header row"))
        for index, row in enumerate(reader, start=1):
            at = Position(index, reader.line_num)
            if "__extra__" in row:
                yield at, RowError.at(name, at, "<row>", "has more cells than the header")
                continue
            yield at, {k: v for k, v in row.items() if k is not None}
    except csv.Error as exc:
        raise FileInvalid(RowError(name, reader.line_num, "<csv>", f"malformed CSV: {exc}")) from None
