"""Input errors, record field access and id alignment shared by the benchmark modules."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from indexing.errors import DomainError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

Records = Sequence[Mapping[str, Any]]


class MetricsInputError(DomainError, ValueError):
    """Bad input that makes a metric undefined; names the input (source), the item (0-based index) and the field."""

    def __init__(self, message: str, *, source: str | None = None, index: int | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.index = index
        self.field = field

    def detail(self) -> list[dict[str, Any]]:
        """As a field error of the request body (gold and predictions arrive in it), in FastAPI's list shape."""
        loc = ["body", *(part for part in (self.source, self.index, self.field) if part is not None)]
        return [{"loc": loc, "msg": str(self), "type": "value_error"}]

    def location(self) -> str:
        """Where the problem is, e.g. `predictions[3].prediction`."""
        where = self.source or ""
        if self.index is not None:
            where += f"[{self.index}]"
        if self.field:
            where += f".{self.field}" if where else self.field
        return where

    def __str__(self) -> str:
        where = self.location()
        return f"{where}: {self.message}" if where else self.message


def check_records(items: Any, *, source: str) -> Records:
    """A non-empty list of JSON objects, or an error naming the first bad item."""
    if not isinstance(items, Sequence) or isinstance(items, (str, bytes)):
        raise MetricsInputError("expected a list of JSON objects", source=source)
    if len(items) == 0:
        raise MetricsInputError("is empty: nothing to evaluate", source=source)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise MetricsInputError(f"expected a JSON object, got {type(item).__name__}", source=source, index=index)
    return items


def get_id(item: Mapping[str, Any], key: str, *, source: str, index: int) -> str:
    """A record's id field as a string (numbers are accepted and stringified)."""
    value = item.get(key)
    if value is None:
        raise MetricsInputError("missing id field", source=source, index=index, field=key)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise MetricsInputError(f"id must be a string or an integer, got {value!r}", source=source, index=index,
                                field=key)
    text = str(value).strip()
    if not text:
        raise MetricsInputError("id is empty", source=source, index=index, field=key)
    return text


def get_path(item: Mapping[str, Any], path: str, *, source: str, index: int) -> Any:
    """A required (possibly nested, dot-separated) field of a gold record."""
    value: Any = item
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value or value[part] is None:
            raise MetricsInputError("missing required field", source=source, index=index, field=path)
        value = value[part]
    return value


@dataclass
class Alignment(Generic[K, V]):
    """Predictions aligned to gold keys; `matched` holds the gold items with one usable prediction."""

    matched: dict[K, tuple[int, V]] = field(default_factory=dict)
    missing: list[K] = field(default_factory=list)
    duplicate: list[K] = field(default_factory=list)
    conflicting: list[K] = field(default_factory=list)
    unknown: list[K] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"missing": len(self.missing), "duplicate": len(self.duplicate),
                "duplicate_conflicting": len(self.conflicting), "unknown_id": len(self.unknown)}


def align(gold_keys: Sequence[K], predictions: Sequence[tuple[K, V]], *, source: str = "predictions",
          answer: Callable[[V], Hashable] | None = None) -> Alignment[K, V]:
    """Align predictions (key, value) with gold keys by key, never by position.

    A gold key predicted more than once is a duplicate: it stays usable only when `answer` gives the same result
    for every copy (the gold files themselves repeat items, so a prediction file that follows them repeats too).
    A prediction key absent from the gold is unknown; when no prediction key matches any gold key the inputs do
    not belong together and it is an error.
    """
    gold_set = set(gold_keys)
    copies: dict[K, list[tuple[int, V]]] = {}
    for index, (key, value) in enumerate(predictions):
        copies.setdefault(key, []).append((index, value))
    if predictions and gold_set and not (gold_set & copies.keys()):
        first = predictions[0][0]
        raise MetricsInputError(
            f"none of the {len(predictions)} prediction ids matches a gold id (first prediction id: {first!r}); "
            "are gold and predictions from the same benchmark task?", source=source)
    result: Alignment[K, V] = Alignment()
    result.unknown = [key for key, _ in predictions if key not in gold_set]
    for key in gold_keys:
        found = copies.get(key, [])
        if not found:
            result.missing.append(key)
            continue
        if len(found) > 1:
            result.duplicate.append(key)
            if answer is None or len({answer(value) for _, value in found}) > 1:
                result.conflicting.append(key)
                continue
        result.matched[key] = found[0]
    return result


# ----------------------------------------------------------------------------------------------- files


class InputFileError(ValueError):
    """A file that cannot be read as records; the message names the file, line and column."""


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _json_array(path: Path, text: str, start: int) -> tuple[list[Any], list[str]]:
    """Elements of a JSON array, each with its position (`file item N (line L, column C)`)."""
    decoder = json.JSONDecoder()
    items: list[Any] = []
    where: list[str] = []
    position = start + 1
    expect_item = True
    while True:
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
        if position >= len(text):
            line, column = _line_col(text, position)
            raise InputFileError(f"{path} line {line} column {column}: not valid JSON: the array is not closed")
        if text[position] == "]" and (not items or not expect_item):
            break
        if not expect_item:
            if text[position] != ",":
                line, column = _line_col(text, position)
                raise InputFileError(f"{path} line {line} column {column}: not valid JSON: expected ',' or ']' "
                                     f"after item {len(items)}")
            position += 1
            expect_item = True
            continue
        try:
            item, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise InputFileError(f"{path} line {error.lineno} column {error.colno}: not valid JSON "
                                 f"(item {len(items) + 1}): {error.msg}") from error
        line, column = _line_col(text, position)
        items.append(item)
        where.append(f"{path} item {len(items)} (line {line}, column {column})")
        position = end
        expect_item = False
    trailing = text[position + 1:].strip()
    if trailing:
        line, column = _line_col(text, text.index(trailing[0], position + 1))
        raise InputFileError(f"{path} line {line} column {column}: not valid JSON: text after the array")
    return items, where


def _csv_value(cell: str | None) -> Any:
    """A CSV cell: empty is missing, a JSON number is a number, anything else (ids such as "007") stays text."""
    if cell is None or not cell.strip():
        return None
    text = cell.strip()
    if re.fullmatch(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?", text):  # JSON's number grammar: "007" stays
        return json.loads(text)
    return cell


def _csv_records(path: Path, text: str) -> tuple[list[Any], list[str]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    items: list[Any] = []
    where: list[str] = []
    if reader.fieldnames is None:
        return items, where
    if len(set(reader.fieldnames)) != len(reader.fieldnames):
        raise InputFileError(f"{path} line 1: the CSV header repeats a column: {reader.fieldnames}")
    start = 2
    try:
        for row in reader:
            if None in row:
                raise InputFileError(f"{path} line {start}: more cells than the header has columns")
            if any(cell is not None and cell.strip() for cell in row.values()):
                items.append({key: _csv_value(cell) for key, cell in row.items()})
                where.append(f"{path} line {start}")
            start = reader.line_num + 1
    except csv.Error as error:
        raise InputFileError(f"{path} line {reader.line_num}: not valid CSV: {error}") from error
    return items, where


def read_records(path: Path) -> tuple[list[Any], list[str]]:
    """Records of a JSON array, JSONL or CSV (by `.csv` suffix) file, and where each one is.

    A UTF-8 byte-order mark (files saved by spreadsheet tools) is accepted; CRLF line ends too. Positions read
    `file line N` (JSONL, CSV) or `file item N (line L, column C)` (JSON array, one line or pretty-printed).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise InputFileError(f"{path}: cannot read: {error}") from error
    if path.suffix.lower() == ".csv":
        return _csv_records(path, text)
    stripped = text.lstrip()
    if stripped.startswith("["):
        return _json_array(path, text, len(text) - len(stripped))
    items, where = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise InputFileError(f"{path} line {number} column {error.colno}: not valid JSON ({error.msg}); "
                                 "expected one JSON object per line, or a JSON array") from error
        where.append(f"{path} line {number}")
    return items, where


def first_copies(predictions: Sequence[tuple[K, V]]) -> dict[K, V]:
    """The first prediction of each key: the reference blocks' rule for a repeated prediction id.

    The reference programs produce one answer per item and never read a file with repeats; taking the first
    copy is this project's convention, stated in every reference block.
    """
    found: dict[K, V] = {}
    for key, value in predictions:
        found.setdefault(key, value)
    return found
