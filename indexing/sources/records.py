"""The normalised paper record every source produces, and its validation."""

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal, overload

from indexing.sources.dates import date_from_year, parse_date
from indexing.sources.errors import RowInvalid


MAX_COUNT = 2**31 - 1
# CSV injection: '=' or '@' anywhere at the start, or '+'/'-' whose first token calls a function or a DDE link
# ('+HYPERLINK(', '-2+3+cmd|'); a plain leading '-' ("-based methods") stays valid
FORMULA = re.compile(r"[=@]|[+\-]\S*?(?:[A-Za-z_][\w.]*\(|[A-Za-z_]\w*\|)")


@dataclass(frozen=True)
class PaperRecord:
    paper_id: str
    source: str
    title: str
    abstract: str
    publication_date: date
    date_rule: str
    year: int
    venue: str | None
    status: str | None
    citation_count: int | None
    doi: str | None
    arxiv_id: str | None
    line: int = 0
    record: int = 0  # 1-based index in its file: records of a one-line file share line 1
    column: int | None = None

    @property
    def title_key(self) -> str:
        return title_key(self.title, self.year)

    @property
    def content_hash(self) -> str:
        return content_hash(self.title, self.abstract)


def title_key(title: str, year: int) -> str:
    folded = unicodedata.normalize("NFKD", title).casefold()
    return f"{re.sub(r'[^0-9a-z]+', ' ', folded).strip()}|{year}"


def content_hash(title: str, abstract: str) -> str:
    return hashlib.sha256(f"{title}\x1f{abstract}".encode()).hexdigest()


@overload
def text(value: Any, field: str, *, required: Literal[True], max_len: int = ...) -> str: ...
@overload
def text(value: Any, field: str, *, required: bool = False, max_len: int = ...) -> str | None: ...


def text(value: Any, field: str, *, required: bool = False, max_len: int = 100_000) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise RowInvalid(field, "is missing or empty")
        return None
    if not isinstance(value, str):
        raise RowInvalid(field, f"must be a string, got {type(value).__name__}")
    if len(value) > max_len:
        raise RowInvalid(field, f"is {len(value)} characters long; the limit is {max_len}")
    if "\x00" in value:
        raise RowInvalid(field, "contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a JSON "\ud800" escape: SQLite cannot store it
        raise RowInvalid(field, "contains invalid Unicode (an unpaired surrogate escape)") from None
    clean = " ".join(value.split()) if field == "title" else value.strip()
    if FORMULA.match(clean):
        raise RowInvalid(field, f"starts like a spreadsheet formula ({clean[:24]!r}); it would run as one when an "
                                "export is opened in a spreadsheet")
    return clean


def count(value, field: str) -> int | None:
    """A non-negative integer count; None/"" means unknown."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise RowInvalid(field, "must be an integer, got a boolean")
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise RowInvalid(field, f"must be an integer, got {value!r}") from None
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise RowInvalid(field, f"must be an integer, got {type(value).__name__}")
    if value < 0:
        raise RowInvalid(field, f"must not be negative, got {value}")
    if value > MAX_COUNT:
        raise RowInvalid(field, f"must be at most {MAX_COUNT}, got {value}")
    return value


def normalise_doi(value) -> str | None:
    doi = text(value, "doi")
    if doi is None:
        return None
    doi = re.sub(r"^(https?://(dx\.)?doi\.org/|doi:)", "", doi.strip(), flags=re.I).lower()
    if not doi.startswith("10."):
        raise RowInvalid("doi", f"is not a DOI: {value!r}")
    return doi


def normalise_arxiv(value) -> str | None:
    arxiv = text(value, "arxiv_id")
    if arxiv is None:
        return None
    arxiv = re.sub(r"^(https?://arxiv\.org/abs/|arxiv:)", "", arxiv.strip(), flags=re.I)
    return re.sub(r"v\d+$", "", arxiv)


def make_record(*, source: str, line: int, paper_id, title, abstract, publication_date=None, year=None,
                venue=None, status=None, citation_count=None, doi=None, arxiv_id=None,
                id_field: str = "id", date_field: str = "publication_date", year_field: str = "year",
                citation_field: str = "citation_count") -> PaperRecord:
    """Validate raw values into a record; raises RowInvalid naming the offending field."""
    if isinstance(paper_id, int) and not isinstance(paper_id, bool):
        paper_id = str(paper_id)
    pid = text(paper_id, id_field, required=True, max_len=255)
    clean_title = text(title, "title", required=True, max_len=2_000)
    clean_abstract = text(abstract, "abstract") or ""
    clean_venue = text(venue, "venue", max_len=255)
    parsed_year = count(year, year_field)
    if publication_date not in (None, ""):
        if not isinstance(publication_date, str):
            raise RowInvalid(date_field, f"must be a YYYY-MM-DD string, got {type(publication_date).__name__}")
        day = parse_date(publication_date, date_field)
        rule = "exact"
    elif parsed_year is not None:
        day, rule = date_from_year(parsed_year, clean_venue, year_field)
    else:
        raise RowInvalid(date_field, f"is missing, and so is '{year_field}'")
    return PaperRecord(
        paper_id=pid, source=source, title=clean_title, abstract=clean_abstract, publication_date=day,
        date_rule=rule, year=day.year, venue=clean_venue, status=text(status, "status", max_len=64),
        citation_count=count(citation_count, citation_field), doi=normalise_doi(doi),
        arxiv_id=normalise_arxiv(arxiv_id), line=line,
    )
