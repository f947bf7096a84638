"""Paper sources: native JSONL/CSV, paperlists JSON, OpenAlex works, Semantic Scholar papers."""

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from indexing.sources.errors import FileInvalid, RowError, RowInvalid
from indexing.sources.readers import Row, looks_like_jsonl, read_csv, read_json_records, read_jsonl
from indexing.sources.records import PaperRecord, make_record

Parsed = Iterator[PaperRecord | RowError]
FORMATS = ("jsonl", "csv", "paperlists", "openalex", "s2")


def _convert(rows: Iterator[Row], name: str, build: Callable[[dict, int], PaperRecord]) -> Parsed:
    for pos, row in rows:
        if isinstance(row, RowError):
            yield row
            continue
        try:
            yield replace(build(row, pos.line), record=pos.record, column=pos.column)
        except RowInvalid as exc:
            yield RowError.at(name, pos, exc.field, exc.message)


def _json_rows(text: str, name: str, container_keys: tuple[str, ...]) -> Iterator[Row]:
    """JSONL line by line; anything else (an array, an API page, one object, pretty-printed objects, on one line
    or many) as JSON documents."""
    if looks_like_jsonl(text):
        return read_jsonl(text, name)
    return read_json_records(text, name, container_keys=container_keys)


def native(text: str, name: str, *, csv_format: bool) -> Parsed:
    """id, title, abstract, publication_date or year, venue, citation_count, doi, arxiv_id."""
    def build(r: dict, line: int) -> PaperRecord:
        return make_record(source="native", line=line, paper_id=r.get("id"), title=r.get("title"),
                           abstract=r.get("abstract"), publication_date=r.get("publication_date"),
                           year=r.get("year"), venue=r.get("venue"), status=r.get("status"),
                           citation_count=r.get("citation_count"), doi=r.get("doi"), arxiv_id=r.get("arxiv_id"))
    rows = read_csv(text, name) if csv_format else _json_rows(text, name, ())
    return _convert(rows, name, build)


# venue_year as the API takes it, e.g. iclr2024: the years a record may have (dates.py), a venue of up to 40 letters
VENUE_YEAR = "^[A-Za-z]{1,40}(19[0-9]{2}|20[0-9]{2}|2100)$"
_PAPERLISTS_NAME = re.compile(r"([A-Za-z]+)([0-9]{4})")
_PAPERLISTS_VENUES = {"aistats": "AISTATS", "colt": "COLT", "corl": "CoRL", "uai": "UAI", "iclr": "ICLR",
                      "nips": "NeurIPS", "neurips": "NeurIPS", "icml": "ICML", "cvpr": "CVPR", "acl": "ACL",
                      "emnlp": "EMNLP", "naacl": "NAACL", "aaai": "AAAI", "ijcai": "IJCAI", "kdd": "KDD"}


def paperlists(text: str, name: str, venue_year: str | None = None) -> Parsed:
    """papercopilot/paperlists: venue and year come from the file name (e.g. aistats2023.json), or from venue_year
    (e.g. aistats2023) when the file was renamed on its way (an upload from stdin)."""
    m = _PAPERLISTS_NAME.fullmatch(venue_year if venue_year is not None else Path(name).stem)
    if not m:
        field = "venue_year" if venue_year is not None else "<file>"
        raise FileInvalid(RowError(name, 1, field, "a paperlists file is named VENUEYEAR.json, e.g. iclr2024.json "
                                                   "(or give its venue and year as venue_year, e.g. iclr2024)"))
    venue, year = _PAPERLISTS_VENUES.get(m[1].lower(), m[1].upper()), int(m[2])

    def build(r: dict, line: int) -> PaperRecord:
        citations = r.get("gs_citation")
        if citations in ("-1", -1, ""):  # the lists' own "unknown"
            citations = None
        return make_record(source="paperlists", line=line, paper_id=r.get("id"), title=r.get("title"),
                           abstract=r.get("abstract"), year=year, venue=venue, status=r.get("status"),
                           citation_count=citations, citation_field="gs_citation")
    return _convert(_json_rows(text, name, ()), name, build)


def inverted_index_text(index) -> str:
    """OpenAlex's abstract_inverted_index ({word: [positions]}) back into text."""
    if index is None:
        return ""
    if not isinstance(index, dict):
        raise RowInvalid("abstract_inverted_index", "must be an object of word -> positions")
    slots: dict[int, str] = {}
    for word, positions in index.items():
        if not isinstance(positions, list) or not all(isinstance(p, int) and p >= 0 for p in positions):
            raise RowInvalid("abstract_inverted_index", f"positions of {word!r} must be a list of integers")
        for p in positions:
            slots[p] = word
    return " ".join(slots[p] for p in sorted(slots))


def _short_openalex_id(value) -> str | None:
    return value.rsplit("/", 1)[-1] if isinstance(value, str) else value


def openalex(text: str, name: str) -> Parsed:
    """OpenAlex works, one per line (or an API page with 'results')."""
    def build(r: dict, line: int) -> PaperRecord:
        location = r.get("primary_location") or {}
        source = (location.get("source") or {}) if isinstance(location, dict) else {}
        ids = r["ids"] if isinstance(r.get("ids"), dict) else {}
        published = r.get("publication_date")
        if isinstance(published, str) and published.endswith("-01-01") and r.get("publication_year") is not None:
            published = None  # OpenAlex pads a year-only date to YYYY-01-01: date it by the year rule instead
        return make_record(source="openalex", line=line, paper_id=_short_openalex_id(r.get("id")),
                           title=r.get("title") or r.get("display_name"),
                           abstract=inverted_index_text(r.get("abstract_inverted_index")),
                           publication_date=published, year=r.get("publication_year"),
                           venue=source.get("display_name") if isinstance(source, dict) else None,
                           citation_count=r.get("cited_by_count"), doi=r.get("doi") or ids.get("doi"),
                           arxiv_id=ids.get("arxiv"), date_field="publication_date", year_field="publication_year",
                           citation_field="cited_by_count")
    return _convert(_json_rows(text, name, ("results",)), name, build)


def s2(text: str, name: str) -> Parsed:
    """Semantic Scholar Graph API papers: JSONL, a JSON array, one object, or a {"data": [...]} page."""
    def build(r: dict, line: int) -> PaperRecord:
        external = r["externalIds"] if isinstance(r.get("externalIds"), dict) else {}
        pub_venue = r["publicationVenue"] if isinstance(r.get("publicationVenue"), dict) else {}
        return make_record(source="s2", line=line, paper_id=r.get("paperId"), title=r.get("title"),
                           abstract=r.get("abstract"), publication_date=r.get("publicationDate"),
                           year=r.get("year"), venue=r.get("venue") or pub_venue.get("name"),
                           citation_count=r.get("citationCount"), doi=external.get("DOI"),
                           arxiv_id=external.get("ArXiv"), id_field="paperId", date_field="publicationDate",
                           citation_field="citationCount")
    return _convert(_json_rows(text, name, ("data",)), name, build)


def detect(text: str, name: str) -> str:
    """Guess the format from the file name and its first record."""
    suffix = Path(name).suffix.lower()
    if suffix == ".csv":
        return "csv"
    head = text.lstrip()[:4000]
    if '"abstract_inverted_index"' in head or '"openalex.org/' in head or "openalex.org/W" in head:
        return "openalex"
    if '"paperId"' in head:
        return "s2"
    if suffix == ".json" and '"gs_citation"' in head:
        return "paperlists"
    if suffix == ".json" and _PAPERLISTS_NAME.fullmatch(Path(name).stem) and head.startswith("["):
        return "paperlists"
    return "jsonl"


def parse(text: str, name: str, fmt: str = "auto", venue_year: str | None = None) -> tuple[str, Parsed]:
    """venue_year: a paperlists file's venue and year when its name does not give them (read by no other format)."""
    fmt = detect(text, name) if fmt == "auto" else fmt
    if fmt == "jsonl":
        return fmt, native(text, name, csv_format=False)
    if fmt == "csv":
        return fmt, native(text, name, csv_format=True)
    if fmt == "paperlists":
        return fmt, paperlists(text, name, venue_year)
    if fmt == "openalex":
        return fmt, openalex(text, name)
    if fmt == "s2":
        return fmt, s2(text, name)
    raise FileInvalid(RowError(name, 1, "--format", f"unknown format {fmt!r}; use auto or one of {', '.join(FORMATS)}"))
