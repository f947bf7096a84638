"""What a whole-file import reports: its errors named by line and field, and the refusal when it wrote nothing."""

from dataclasses import asdict, dataclass
from typing import Any

from indexing.errors import DomainError
from service.schemas import Answer


@dataclass
class RowError:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: field '{self.field}': {self.message}"


class RowErrorOut(Answer):
    """A refused row of an import: its line, the field at fault and why (`text`: the three in one line)."""

    line: int
    field: str
    message: str
    text: str


class ImportReportBase:
    """as_dict for an import's report dataclass: its fields, each error with its text."""

    errors: list[RowError]

    def as_dict(self) -> dict:
        out: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        out["errors"] = [asdict(e) | {"text": str(e)} for e in self.errors]
        return out


class ImportRejected(DomainError):
    """The file had invalid rows: nothing was written."""

    def __init__(self, report: Any) -> None:
        shown = "\n".join(f"  {e}" for e in report.errors[:20])
        more = f"\n  ... and {len(report.errors) - 20} more" if len(report.errors) > 20 else ""
        super().__init__(f"{report.file}: rejected, nothing written ({len(report.errors)} error(s)):\n{shown}{more}")
        self.report = report

    def detail(self) -> dict:
        return {"message": str(self).splitlines()[0], **self.report.as_dict()}
