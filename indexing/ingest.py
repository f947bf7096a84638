"""Ingest: validate, normalise, deduplicate and upsert papers, one transaction per file."""

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.db import session_scope
from indexing.errors import DomainError
from indexing.models import Paper
from indexing.sources.errors import FileInvalid, Position, RowError
from indexing.sources.formats import parse
from indexing.sources.readers import decode
from indexing.sources.records import PaperRecord

UPDATABLE = ("title", "abstract", "publication_date", "date_rule", "year", "venue", "status", "citation_count")


@dataclass
class IngestReport:
    file: str
    format: str = "auto"
    read: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    duplicates: int = 0  # rows merged into an earlier row of the same file (same DOI, arXiv id or title + year)
    rejected: int = 0  # invalid records; every record but the merged ones when the whole file is refused
    written: bool = False
    errors: list[RowError] = field(default_factory=list)

    def check(self) -> None:
        """Every record read is accounted for exactly once; anything else is a bug, never a silent loss."""
        accounted = self.inserted + self.updated + self.unchanged + self.duplicates + self.rejected
        if self.read != accounted:
            raise IngestCountError(f"{self.file}: internal error: read {self.read} records but accounted for "
                                   f"{accounted} (inserted {self.inserted}, updated {self.updated}, unchanged "
                                   f"{self.unchanged}, duplicates {self.duplicates}, rejected {self.rejected}); "
                                   "nothing was written")

    def as_dict(self) -> dict:
        out = asdict(self)
        out["errors"] = [asdict(e) | {"text": str(e)} for e in self.errors]
        return out


class IngestCountError(AssertionError):
    """The report's counts do not add up: an ingest bug. The transaction is rolled back."""


class IngestRejected(DomainError):
    """The file had invalid rows and --skip-invalid was not given: nothing was written."""

    def __init__(self, report: IngestReport) -> None:
        shown = "\n".join(f"  {e}" for e in report.errors[:20])
        more = f"\n  ... and {len(report.errors) - 20} more" if len(report.errors) > 20 else ""
        super().__init__(f"{report.file}: rejected, nothing written ({len(report.errors)} invalid "
                         f"row(s); use --skip-invalid to write the valid ones):\n{shown}{more}")
        self.report = report

    def detail(self) -> dict:
        return {"message": str(self).splitlines()[0], **self.report.as_dict()}


def collect(data: bytes, name: str, fmt: str = "auto",
            venue_year: str | None = None) -> tuple[IngestReport, list[PaperRecord]]:
    """Parse and validate a whole file without touching the database (venue_year: see formats.parse)."""
    report = IngestReport(file=name, format=fmt)
    records: list[PaperRecord] = []
    try:
        report.format, rows = parse(decode(data, name), name, fmt, venue_year)
        for item in rows:
            report.read += 1
            if isinstance(item, RowError):
                report.errors.append(item)
            else:
                records.append(item)
    except FileInvalid as exc:
        report.errors.append(exc.error)
    if report.read == 0 and not report.errors:
        report.errors.append(RowError(name, 1, "<file>", "has no records"))
    if any(e.record is None for e in report.errors):
        records = []  # the file as a whole is unreadable: every record of it is refused, even with skip_invalid
    records = _dedupe_within_file(records, report)
    report.rejected = _rejected_records(report)
    return report, records


def _rejected_records(report: IngestReport) -> int:
    """Records refused: row errors, plus, when the file as a whole is unreadable, every record read."""
    if any(e.record is None for e in report.errors):
        return report.read  # a file-level error refuses every record of it
    return len(report.errors)


def _dedupe_within_file(records: list[PaperRecord], report: IngestReport) -> list[PaperRecord]:
    """A repeated id is an error; a repeated DOI, arXiv id or title + year merges into the first row."""
    by_id: dict[str, PaperRecord] = {}
    seen: dict[tuple[str, str], int] = {}
    kept: dict[int, PaperRecord] = {}
    for rec in records:  # keyed by the record's index in the file: many records may share a line
        if rec.paper_id in by_id:
            first = by_id[rec.paper_id]
            report.errors.append(RowError.at(report.file, Position(rec.record, rec.line, rec.column), "id",
                                             f"duplicate id {rec.paper_id!r}, first at line {_where(first)} "
                                             f"(record {first.record})"))
            continue
        by_id[rec.paper_id] = rec
        keys = [("doi", rec.doi), ("arxiv", rec.arxiv_id), ("title", rec.title_key)]
        same = next((seen[(k, v)] for k, v in keys if v and (k, v) in seen), None)
        if same is not None:
            report.duplicates += 1
            kept[same] = _merge(kept[same], rec)
            continue
        for k, v in keys:
            if v:
                seen[(k, v)] = rec.record
        kept[rec.record] = rec
    return list(kept.values())


def _where(rec: PaperRecord) -> str:
    return f"{rec.line}:{rec.column}" if rec.column is not None else str(rec.line)


def _merge(first: PaperRecord, later: PaperRecord) -> PaperRecord:
    """Keep the first row's identity; take the later row's newer citation count and missing identifiers."""
    return replace(first, citation_count=later.citation_count if later.citation_count is not None
                   else first.citation_count, doi=first.doi or later.doi, arxiv_id=first.arxiv_id or later.arxiv_id,
                   abstract=first.abstract or later.abstract)


def find_existing(session: Session, rec: PaperRecord) -> Paper | None:
    for column, value in ((Paper.paper_id, rec.paper_id), (Paper.doi, rec.doi), (Paper.arxiv_id, rec.arxiv_id),
                          (Paper.title_key, rec.title_key)):
        if value:
            found = session.scalars(select(Paper).where(column == value).limit(1)).first()
            if found is not None:
                return found
    return None


def upsert(session: Session, rec: PaperRecord, citations_at: date | None = None) -> str:
    """Insert or refresh one paper; returns 'inserted', 'updated' or 'unchanged'.

    citations_at is the day the record's citation count was taken (an API fetch knows it; a file does not)."""
    taken = citations_at if rec.citation_count is not None else None
    paper = find_existing(session, rec)
    if paper is None:
        session.add(Paper(paper_id=rec.paper_id, source=rec.source, title=rec.title, abstract=rec.abstract,
                          publication_date=rec.publication_date, date_rule=rec.date_rule, year=rec.year,
                          venue=rec.venue, status=rec.status, citation_count=rec.citation_count, doi=rec.doi,
                          arxiv_id=rec.arxiv_id, title_key=rec.title_key, content_hash=rec.content_hash,
                          citations_at=taken))
        session.flush()
        return "inserted"
    if taken is not None:
        paper.citations_at = taken  # a re-taken count is fresher even when unchanged; not a content change
    elif rec.citation_count is not None and rec.citation_count != paper.citation_count:
        paper.citations_at = None  # a file's count replaces it: taken on a day nobody knows
    changed = False
    keep_date = paper.date_rule == "exact" and rec.date_rule != "exact"
    for name in UPDATABLE:
        value = getattr(rec, name)
        if name == "citation_count" and value is None:
            continue  # an unknown count never erases a known one
        if keep_date and name in ("publication_date", "date_rule", "year"):
            continue  # a year-only copy (a repository record of a journal paper) never blurs an exact date
        if getattr(paper, name) != value:
            setattr(paper, name, value)
            changed = True
    for name in ("doi", "arxiv_id"):  # fill identifiers we lacked, unless another paper owns them
        value = getattr(rec, name)
        if value and getattr(paper, name) is None and session.scalars(
                select(Paper.pk).where(getattr(Paper, name) == value)).first() is None:
            setattr(paper, name, value)
            changed = True
    if changed:
        paper.title_key, paper.content_hash = rec.title_key, rec.content_hash
        session.flush()
    return "updated" if changed else "unchanged"


def ingest_bytes(data: bytes, name: str, *, db_path: Path, fmt: str = "auto", skip_invalid: bool = False,
                 progress: Callable[[str, int, int], None] | None = None, citations_at: date | None = None,
                 within: Callable[[Session, IngestReport], None] | None = None,
                 venue_year: str | None = None) -> IngestReport:
    """Ingest one file. Raises IngestRejected (nothing written) on invalid rows unless skip_invalid.

    within(session, report) runs inside the file's transaction after its rows (an API fetch writes its
    checkpoint there, so a page and the cursor after it commit together or not at all)."""
    report, records = collect(data, name, fmt, venue_year)
    if report.errors and not skip_invalid:
        report.rejected = report.read - report.duplicates  # the file is refused: every record not merged with
        report.check()                                      # another is refused with it; `errors` lists why
        raise IngestRejected(report)
    with session_scope(db_path, immediate=True) as session:  # another file's same papers cannot land meanwhile
        for rec in records:
            outcome = upsert(session, rec, citations_at)
            setattr(report, outcome, getattr(report, outcome) + 1)
            if progress:
                progress("ingest", 1, len(records))
        report.check()  # inside the transaction: counts that do not add up write nothing
        report.written = bool(records)
        if within is not None:
            within(session, report)
    return report


def ingest_path(path: Path, **kwargs) -> IngestReport:
    return ingest_bytes(path.read_bytes(), str(path), **kwargs)
