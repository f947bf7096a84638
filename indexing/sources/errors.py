"""Row-level errors that name the file, the record's position (line, column, record number) and the field."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Position:
    """Where a record sits: its 1-based index in the file, the line it starts on, and (for JSON documents,
    where many records may share a line) the column it starts at."""

    record: int
    line: int
    column: int | None = None

    def where(self) -> str:
        return f"{self.line}:{self.column}" if self.column is not None else str(self.line)


@dataclass(frozen=True)
class RowError:
    file: str
    line: int
    field: str
    message: str
    record: int | None = None  # None for errors about the file as a whole
    column: int | None = None

    @classmethod
    def at(cls, file: str, pos: Position, field: str, message: str) -> "RowError":
        return cls(file, pos.line, field, message, record=pos.record, column=pos.column)

    def __str__(self) -> str:
        where = f"{self.line}:{self.column}" if self.column is not None else str(self.line)
        record = f" (record {self.record})" if self.record is not None else ""
        return f"{self.file}:{where}: field '{self.field}': {self.message}{record}"


class RowInvalid(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field '{field}': {message}")
        self.field, self.message = field, message


class FileInvalid(ValueError):
    """The file as a whole cannot be read (broken JSON, unknown format, bad encoding)."""

    def __init__(self, error: RowError) -> None:
        super().__init__(str(error))
        self.error = error
