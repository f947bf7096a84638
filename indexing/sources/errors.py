"""Row-level errors that name the file, the line and the field."""

from dataclasses import dataclass


@dataclass(frozen=True)
class RowError:
    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: field '{self.field}': {self.message}"


class RowInvalid(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"field '{field}': {message}")
        self.field, self.message = field, message


class FileInvalid(ValueError):
    """The file as a whole cannot be read (broken JSON, unknown format, bad encoding)."""

    def __init__(self, error: RowError) -> None:
        super().__init__(str(error))
        self.error = error
