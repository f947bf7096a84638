"""Ingest: every format on real-shaped fixtures, dedup and upsert, and bad rows that write nothing."""

from datetime import date

import pytest
from sqlalchemy import func, select

from indexing.db import session_scope
from indexing.ingest import IngestRejected, ingest_bytes, ingest_path
from indexing.models import Paper
from tests.helpers import FIXTURES


def papers(settings) -> dict[str, Paper]:
    with session_scope(settings.db_path) as s:
        return {p.paper_id: p for p in s.scalars(select(Paper))}


def count(settings) -> int:
    with session_scope(settings.db_path) as s:
        return s.scalar(select(func.count()).select_from(Paper))


def test_native_jsonl(settings):
    report = ingest_path(FIXTURES / "native.jsonl", db_path=settings.db_path)
    assert (report.format, report.read, report.inserted, report.rejected) == ("jsonl", 3, 3, 0)
    got = papers(settings)
    assert got["nat-1"].doi == "10.5555/nat.1" and got["nat-1"].arxiv_id == "2403.01234"
    assert got["nat-2"].publication_date == date(2024, 11, 1)  # CoRL's usual month for a year-only record
    assert got["nat-2"].date_rule == "year+venue-month(corl)"
    assert got["nat-3"].citation_count is None


def test_native_csv(settings):
    report = ingest_path(FIXTURES / "native.csv", db_path=settings.db_path)
    assert (report.format, report.inserted) == ("csv", 2)
    got = papers(settings)
    assert got["csv-1"].title == "Graph Transformers, Revisited" and got["csv-1"].citation_count == 17
    assert got["csv-2"].publication_date == date(2025, 12, 1) and got["csv-2"].doi == "10.5555/csv.2"


def test_paperlists_venue_and_year_from_file_name(settings):
    report = ingest_path(FIXTURES / "iclr2024.json", db_path=settings.db_path)
    assert (report.format, report.inserted) == ("paperlists", 2)
    got = papers(settings)
    assert got["Xy12AbCdEf"].venue == "ICLR" and got["Xy12AbCdEf"].year == 2024
    assert got["Xy12AbCdEf"].publication_date == date(2024, 5, 1)
    assert got["Xy12AbCdEf"].status == "Poster" and got["Xy12AbCdEf"].citation_count == 12
    assert got["Zz98QwErTy"].citation_count is None  # "-1" is the list's "unknown"


def test_paperlists_upload_without_its_name_takes_venue_year(settings, tmp_path):
    """An upload renamed on its way (curl -F file=@- names it "-") says its venue and year in venue_year."""
    data = (FIXTURES / "iclr2024.json").read_bytes()
    with pytest.raises(IngestRejected) as refused:
        ingest_bytes(data, "-", db_path=settings.db_path, fmt="paperlists", venue_year="iclr")
    assert refused.value.report.errors[0].field == "venue_year" and count(settings) == 0
    report = ingest_bytes(data, "-", db_path=settings.db_path, fmt="paperlists", venue_year="neurips2023")
    assert (report.format, report.inserted) == ("paperlists", 2)
    assert papers(settings)["Xy12AbCdEf"].venue == "NeurIPS" and papers(settings)["Xy12AbCdEf"].year == 2023


def test_paperlists_upload_venue_year_over_http(tmp_path):
    from fastapi.testclient import TestClient

    from indexing.db import migrate
    from indexing.settings import Settings
    from service.app import create_app
    settings = Settings(home=tmp_path, service={"admin_token": "secret"})
    migrate(settings.db_path)
    auth, data = {"Authorization": "Bearer secret"}, (FIXTURES / "iclr2024.json").read_bytes()
    with TestClient(create_app(settings)) as client:
        schema = client.get("/openapi.json").json()["paths"]["/v1/papers"]["post"]["parameters"]
        assert any(p["name"] == "venue_year" for p in schema)
        r = client.post("/v1/papers", params={"format": "paperlists"}, headers=auth, files={"file": ("file", data)})
        assert r.status_code == 422 and "venue_year" in r.text, r.text
        for bad in ("2024", "iclr1200", "iclr20245"):  # no venue; a year no record may have; no year
            r = client.post("/v1/papers", params={"format": "paperlists", "venue_year": bad}, headers=auth,
                            files={"file": ("file", data)})
            assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "venue_year"], r.text
        r = client.post("/v1/papers", params={"format": "paperlists", "venue_year": "iclr2024"}, headers=auth,
                        files={"file": ("file", data)})
        assert r.status_code == 200 and r.json()["inserted"] == 2, r.text


def test_openalex(settings):
    report = ingest_path(FIXTURES / "openalex.jsonl", db_path=settings.db_path)
    assert (report.format, report.inserted) == ("openalex", 2)
    got = papers(settings)
    w = got["W4380000001"]
    assert w.abstract == "We find retrieval heads that retrieval matter."
    assert w.doi == "10.5555/oa.1" and w.citation_count == 88
    assert w.venue == "International Conference on Learning Representations"
    assert got["W4380000002"].publication_date == date(2023, 7, 1)  # year only, no venue: July 1st


def test_semantic_scholar_page_and_jsonl(settings):
    r1 = ingest_path(FIXTURES / "s2_page.json", db_path=settings.db_path)
    r2 = ingest_path(FIXTURES / "s2.jsonl", db_path=settings.db_path)
    assert (r1.format, r1.inserted, r2.format, r2.inserted) == ("s2", 2, "s2", 1)
    got = papers(settings)
    p = got["649def34f8be52c8b66281af98ae884c09aef38b"]
    assert p.venue == "Neural Information Processing Systems" and p.arxiv_id == "2405.00001"
    assert got["0f3a9c1b2d4e5f60718293a4b5c6d7e8f9012345"].publication_date == date(2023, 7, 1)  # ICML: July


def test_reingest_upserts_and_refreshes_citations(settings, tmp_path):
    ingest_path(FIXTURES / "native.jsonl", db_path=settings.db_path)
    again = ingest_path(FIXTURES / "native.jsonl", db_path=settings.db_path)
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 3)
    newer = tmp_path / "newer.jsonl"
    newer.write_text('{"id": "nat-1", "title": "Sparse Mixture Routing for Long-Context Transformers", '
                     '"abstract": "We route tokens to sparse experts by context length.", '
                     '"publication_date": "2024-03-15", "venue": "ICLR", "citation_count": 99}\n')
    r = ingest_path(newer, db_path=settings.db_path)
    assert (r.inserted, r.updated) == (0, 1)
    assert papers(settings)["nat-1"].citation_count == 99


def test_dedup_by_doi_arxiv_and_title_across_sources(settings, tmp_path):
    ingest_path(FIXTURES / "native.jsonl", db_path=settings.db_path)
    other = tmp_path / "other.jsonl"
    other.write_text(
        '{"id": "x-doi", "title": "Different title", "publication_date": "2024-03-15", '
        '"doi": "https://doi.org/10.5555/NAT.1", "citation_count": 50}\n'
        '{"id": "x-title", "title": "calibrated uncertainty for robot GRASPING!", "year": 2024, "citation_count": 9}\n')
    r = ingest_path(other, db_path=settings.db_path)
    assert (r.inserted, r.updated) == (0, 2)
    got = papers(settings)
    assert "x-doi" not in got and got["nat-1"].citation_count == 50  # the first source's id is kept
    assert got["nat-2"].citation_count == 9


BAD_ROWS = {
    "missing title": ('{"id": "b1", "abstract": "x", "publication_date": "2024-01-01"}', 2, "title"),
    "unparsable date": ('{"id": "b1", "title": "T", "publication_date": "2024-13-45"}', 2, "publication_date"),
    "negative citations": ('{"id": "b1", "title": "T", "year": 2024, "citation_count": -3}', 2, "citation_count"),
    "wrong type": ('{"id": "b1", "title": ["T"], "year": 2024}', 2, "title"),
    "wrong citation type": ('{"id": "b1", "title": "T", "year": 2024, "citation_count": "many"}', 2, "citation_count"),
    "broken json": ('{"id": "b1", "title": "T", "year": 2024', 2, "<json>"),
    "no date or year": ('{"id": "b1", "title": "T"}', 2, "publication_date"),
    "duplicate id": ('{"id": "ok-1", "title": "Another", "year": 2024}', 2, "id"),
}


@pytest.mark.parametrize("kind", BAD_ROWS)
def test_bad_row_rejects_file_and_names_line_and_field(settings, tmp_path, kind):
    bad, line, field = BAD_ROWS[kind]
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "ok-1", "title": "Fine paper", "year": 2024}\n' + bad + "\n")
    with pytest.raises(IngestRejected) as exc:
        ingest_path(path, db_path=settings.db_path)
    err = exc.value.report.errors[0]
    assert (err.file, err.line, err.field) == (str(path), line, field)
    assert f"bad.jsonl:{line}: field '{field}'" in str(exc.value)
    assert count(settings) == 0  # nothing written, not even the good row


def test_skip_invalid_writes_valid_rows_and_reports_rejected(settings, tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"id": "ok-1", "title": "Fine", "year": 2024}\n{"id": "b", "year": 2024}\n'
                    '{"id": "ok-2", "title": "Also fine", "publication_date": "2024-02-02"}\n')
    report = ingest_path(path, db_path=settings.db_path, skip_invalid=True)
    assert (report.read, report.inserted, report.rejected) == (3, 2, 1)
    assert report.errors[0].line == 2 and report.errors[0].field == "title"
    assert count(settings) == 2


def test_csv_bad_row_line_numbers(settings, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,title,year,citation_count\na,Fine,2024,1\nb,Bad,2024,-1\n")
    with pytest.raises(IngestRejected) as exc:
        ingest_path(path, db_path=settings.db_path)
    assert (exc.value.report.errors[0].line, exc.value.report.errors[0].field) == (3, "citation_count")


def test_broken_json_array_names_line(settings, tmp_path):
    path = tmp_path / "neurips2024.json"
    path.write_text('[\n{"id": "a", "title": "A", "gs_citation": 1},\n{"id": "b", "title": \n]')
    with pytest.raises(IngestRejected) as exc:
        ingest_path(path, db_path=settings.db_path)
    assert exc.value.report.errors[0].line == 3
    assert count(settings) == 0


@pytest.mark.parametrize("data,field", [(b"", "<file>"), (b"\xff\xfe\x00bad", "<file>"), (b"[1, 2]", "<json>")])
def test_unreadable_files(settings, data, field):
    with pytest.raises(IngestRejected) as exc:
        ingest_bytes(data, "weird.json", db_path=settings.db_path)
    assert exc.value.report.errors[0].field == field
    assert count(settings) == 0


def test_bom_is_accepted(settings):
    data = '\ufeff{"id": "bom", "title": "With BOM", "year": 2024}\n'.encode()
    assert ingest_bytes(data, "bom.jsonl", db_path=settings.db_path).inserted == 1


def test_migrations_from_empty(tmp_path):
    import sqlite3

    from indexing.db import migrate

    db = tmp_path / "fresh" / "h.db"
    migrate(db)
    migrate(db)  # idempotent
    con = sqlite3.connect(db)
    tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    assert {"papers", "embeddings", "index_builds", "runs", "ideas", "scores", "matches", "alembic_version"} <= tables
    assert con.execute("pragma journal_mode").fetchone()[0] == "wal"
