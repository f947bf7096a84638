"""Ingest keeps every record whatever the file's layout (one line, pretty-printed, CRLF, BOM, API pages), names
each record's position, and its report always adds up."""

import csv
import io
import json
import sqlite3
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from sqlalchemy import func, select

from indexing.db import migrate, session_scope
from indexing.ingest import IngestRejected, IngestReport, ingest_bytes
from indexing.models import Paper
from tests.helpers import FIXTURES, ROOT, SHARED_DATA

BOM = b"\xef\xbb\xbf"
COLUMNS = ("paper_id", "source", "title", "abstract", "publication_date", "date_rule", "year", "venue", "status",
           "citation_count", "doi", "arxiv_id", "title_key", "content_hash")


def identity_holds(r: IngestReport) -> bool:
    return r.read == r.inserted + r.updated + r.unchanged + r.duplicates + r.rejected


class Db:
    """One migrated database, emptied between examples."""

    def __init__(self, path: Path) -> None:
        self.path = path
        migrate(path)

    def ingest(self, data: bytes, name: str, fmt: str) -> tuple[IngestReport, list[tuple]]:
        con = sqlite3.connect(self.path)
        con.execute("DELETE FROM papers")
        con.commit()
        report = ingest_bytes(data, name, db_path=self.path, fmt=fmt)
        rows = con.execute(f"SELECT {', '.join(COLUMNS)} FROM papers ORDER BY paper_id").fetchall()
        con.close()
        assert identity_holds(report), report
        return report, rows


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Db:
    return Db(tmp_path_factory.mktemp("layouts") / "hindsight.db")


# --- valid papers ------------------------------------------------------------------------------------------
words = st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N")), min_size=1, max_size=8)
# free text: quotes, backslashes, commas, newlines, non-ASCII; no control characters or lone surrogates
free = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cs"), include_characters="\n\t"),
               max_size=60)


@st.composite
def papers(draw) -> list[dict]:
    n = draw(st.integers(1, 12))
    out = []
    for i in range(n):
        title = "T " + " ".join(draw(st.lists(words, min_size=1, max_size=5)))  # a letter first: never a formula
        out.append({
            "n": i, "title": title, "abstract": "A" + draw(free) if draw(st.booleans()) else "",
            "date": draw(st.one_of(st.none(), st.dates(date(2020, 1, 1), date(2026, 12, 31)))),
            "year": draw(st.integers(2020, 2026)),
            "venue": draw(st.sampled_from([None, "ICLR", "NeurIPS", "Some, Venue"])),
            "citations": draw(st.one_of(st.none(), st.integers(0, 10_000))),
            "doi": f"10.5555/x.{i}.{draw(st.integers(0, 99))}" if draw(st.booleans()) else None,
        })
    return out


def native_rows(ps: list[dict]) -> list[dict]:
    return [{"id": f"p-{p['n']}", "title": p["title"], "abstract": p["abstract"],
             **({"publication_date": p["date"].isoformat()} if p["date"] else {"year": p["year"]}),
             "venue": p["venue"], "citation_count": p["citations"], "doi": p["doi"]} for p in ps]


def paperlists_rows(ps: list[dict]) -> list[dict]:
    return [{"id": f"Or{p['n']:04d}xx", "title": p["title"], "abstract": p["abstract"], "status": "Poster",
             "gs_citation": -1 if p["citations"] is None else p["citations"]} for p in ps]


def inverted(text: str) -> dict | None:
    index: dict[str, list[int]] = {}
    for position, word in enumerate(text.split()):
        index.setdefault(word, []).append(position)
    return index or None


def openalex_rows(ps: list[dict]) -> list[dict]:
    return [{"id": f"https://openalex.org/W{1000 + p['n']}", "title": p["title"],
             "abstract_inverted_index": inverted(p["abstract"]),
             "publication_date": p["date"].isoformat() if p["date"] else None, "publication_year": p["year"],
             "primary_location": {"source": {"display_name": p["venue"]} if p["venue"] else None},
             "cited_by_count": p["citations"] or 0, "doi": f"https://doi.org/{p['doi']}" if p["doi"] else None}
            for p in ps]


def s2_rows(ps: list[dict]) -> list[dict]:
    return [{"paperId": f"{p['n']:040x}", "title": p["title"], "abstract": p["abstract"] or None,
             "publicationDate": p["date"].isoformat() if p["date"] else None, "year": p["year"],
             "venue": p["venue"] or "", "citationCount": p["citations"],
             "externalIds": {"DOI": p["doi"]} if p["doi"] else {}} for p in ps]


# --- layouts -------------------------------------------------------------------------------------------------
def jsonl(rows, eol="\n") -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + eol for r in rows)


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")  # JSON escapes newlines inside strings: only the layout changes


def json_layouts(canonical: str, doc) -> dict[str, str]:
    """The same records as: the file itself, a one-line document, a pretty-printed one, CRLF and BOM versions."""
    one_line, pretty = json.dumps(doc, ensure_ascii=False), json.dumps(doc, indent=2, ensure_ascii=False)
    return {"as given": canonical, "one line": one_line, "one line, CRLF end": one_line + "\r\n",
            "pretty": pretty, "pretty, CRLF": crlf(pretty), "given, CRLF": crlf(canonical),
            "BOM + given": "\ufeff" + canonical, "BOM + one line": "\ufeff" + one_line,
            "BOM + pretty, CRLF": "\ufeff" + crlf(pretty)}


def csv_text(rows: list[dict], eol: str) -> str:
    out = io.StringIO()
    fields = ["id", "title", "abstract", "publication_date", "year", "venue", "citation_count", "doi"]
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator=eol)
    writer.writeheader()
    for r in rows:
        writer.writerow({k: "" if v is None else v for k, v in r.items()})
    return out.getvalue()


def layouts(fmt: str, ps: list[dict]) -> tuple[str, dict[str, str]]:
    """(file name, layout -> text) for one format."""
    if fmt == "jsonl":
        rows = native_rows(ps)
        variants = json_layouts(jsonl(rows), rows)
        variants["pretty objects one after another"] = "\n".join(json.dumps(r, indent=2) for r in rows) + "\n"
        return "papers.jsonl", variants
    if fmt == "csv":
        rows = native_rows(ps)
        return "papers.csv", {"as given": csv_text(rows, "\n"), "CRLF": csv_text(rows, "\r\n"),
                              "BOM": "\ufeff" + csv_text(rows, "\n"), "BOM + CRLF": "\ufeff" + csv_text(rows, "\r\n")}
    if fmt == "paperlists":
        rows = paperlists_rows(ps)
        return "naacl2024.json", json_layouts(json.dumps(rows, indent=4, ensure_ascii=False), rows)
    if fmt == "openalex":
        rows = openalex_rows(ps)
        page = {"meta": {"count": len(rows), "per_page": 200, "next_cursor": None}, "results": rows,
                "group_by": []}
        variants = json_layouts(jsonl(rows), page)
        variants["array, one line"] = json.dumps(rows)
        return "works.jsonl", variants
    rows = s2_rows(ps)
    page = {"total": len(rows), "token": None, "data": rows}
    variants = json_layouts(jsonl(rows), page)
    variants |= {"offset page, pretty": json.dumps({"total": 99, "offset": 0, "next": 10, "data": rows}, indent=1),
                 "array, one line": json.dumps(rows), "array, pretty": json.dumps(rows, indent=2)}
    return "papers.json", variants


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "paperlists", "openalex", "s2"])
@hsettings(max_examples=10, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ps=papers())
def test_every_layout_ingests_the_same_rows(db, fmt, ps):
    name, variants = layouts(fmt, ps)
    base_report, base_rows = db.ingest(variants["as given"].encode(), name, fmt)
    assert base_report.rejected == 0 and base_report.read == len(ps)
    assert len(base_rows) == len(ps) - base_report.duplicates
    for layout, text in variants.items():
        for auto in (fmt, "auto"):
            if auto == "auto" and fmt == "openalex" and not any(p["abstract"].split() for p in ps):
                continue  # nothing marks these as OpenAlex works (no inverted index, ids are plain strings)
            report, rows = db.ingest(text.encode(), name, auto)
            assert (report.read, report.duplicates, report.rejected) == (base_report.read, base_report.duplicates, 0), \
                (layout, auto, report)
            assert rows == base_rows, (layout, auto)


def test_one_line_array_keeps_every_record_and_names_record_and_column(db):
    """The reported bug: a one-line paperlists file of 912 papers inserted 1."""
    rows = [{"id": f"Na{i:04d}", "title": f"Paper number {i}", "abstract": "x", "gs_citation": i} for i in range(912)]
    report, stored = db.ingest(json.dumps(rows).encode(), "naacl2024.json", "paperlists")
    assert (report.read, report.inserted, report.duplicates, report.rejected) == (912, 912, 0, 0)
    assert len(stored) == 912
    rows[57]["title"] = ""
    with pytest.raises(IngestRejected) as exc:
        ingest_bytes(json.dumps(rows).encode(), "naacl2024.json", db_path=db.path, fmt="paperlists")
    err = exc.value.report.errors[0]
    column = len(json.dumps(rows[:57])) + 2  # "[r1, ..., r57" then ", ": record 58 starts at 1-based column L + 2
    assert (err.record, err.line, err.column, err.field) == (58, 1, column, "title")
    assert f"naacl2024.json:1:{column}: field 'title'" in str(exc.value) and "(record 58)" in str(exc.value)
    assert identity_holds(exc.value.report) and exc.value.report.rejected == 912


def test_api_page_records_are_distinct(db):
    page = {"total": 3, "offset": 0, "data": [
        {"paperId": "a" * 40, "title": "First", "year": 2024}, {"paperId": "b" * 40, "title": "Second", "year": 2024},
        {"paperId": "c" * 40, "title": "Third", "year": 2024, "citationCount": -1}]}
    with pytest.raises(IngestRejected) as exc:
        ingest_bytes(json.dumps(page).encode(), "page.json", db_path=db.path, fmt="s2")
    err = exc.value.report.errors[0]
    assert (err.record, err.line, err.field) == (3, 1, "citationCount") and err.column is not None
    page["data"].pop()
    report, stored = db.ingest(json.dumps(page).encode(), "page.json", "s2")
    assert (report.read, report.inserted, len(stored)) == (2, 2, 2)


def suite_files() -> list[Path]:
    files = sorted(FIXTURES.glob("*")) + sorted((ROOT / "data").glob("*.jsonl")) + sorted((ROOT / "data").glob("*.csv"))
    if SHARED_DATA.exists():
        files += sorted((SHARED_DATA / "paperlists").rglob("*.json")) + sorted((SHARED_DATA / "apis").rglob("*.json"))
    return [f for f in files if f.is_file()]


def test_counts_add_up_for_every_file_of_the_suite(db):
    checked = 0
    for path in suite_files():
        for skip in (False, True):
            try:
                report = ingest_bytes(path.read_bytes(), path.name, db_path=db.path, skip_invalid=skip)
            except IngestRejected as exc:
                report = exc.report
            assert identity_holds(report), (path, report)
            checked += 1
    assert checked >= 2 * 8


@pytest.mark.shared
@pytest.mark.skipif(not (SHARED_DATA / "paperlists").exists(), reason="needs ../shared/data")
def test_the_shared_paperlists_ingest_whole_and_minified_they_are_the_same_rows(settings, capsys):
    paths = sorted((SHARED_DATA / "paperlists").rglob("*.json"))
    reports = [ingest_bytes(p.read_bytes(), p.name, db_path=settings.db_path) for p in paths]
    assert all(identity_holds(r) for r in reports)
    assert sum(r.read for r in reports) == 3136 and sum(r.rejected for r in reports) == 0
    with session_scope(settings.db_path) as s:
        total = s.scalar(select(func.count()).select_from(Paper))
        lo, hi = s.execute(select(func.min(Paper.citation_count), func.max(Paper.citation_count))).one()
        missing = s.scalar(select(func.count()).where(Paper.citation_count.is_(None)))
        in_window = s.scalar(select(func.count()).where(Paper.publication_date >= date(2023, 6, 1),
                                                         Paper.publication_date <= date(2025, 12, 31)))
    with capsys.disabled():
        print(f"\nshared paperlists: {total} papers, citations {lo}..{hi} ({missing} unknown), "
              f"{in_window} in the window 2023-06-01..2025-12-31")
    assert total == sum(r.inserted for r in reports) == 3136
    assert (lo, hi) == (0, 1068) or hi > lo
    assert in_window == total - 496  # only AISTATS 2023 (May) precedes the June cutoff
    # the same files minified onto one line: the same rows, so every record is unchanged
    for path in paths:
        minified = json.dumps(json.loads(path.read_bytes()), separators=(",", ":"), ensure_ascii=False)
        report = ingest_bytes(minified.encode(), path.name, db_path=settings.db_path, fmt="paperlists")
        assert identity_holds(report) and report.rejected == 0 and report.unchanged == report.read, report
