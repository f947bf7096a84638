"""Citation refresh against the loopback replay server: S2 /paper/batch (nulls, 500-id batches), OpenAlex id
filters, the per-row snapshot date and the manifest's snapshot range."""

import json
from datetime import date

import pytest
from sqlalchemy import select, update

from indexing.build import build_index
from indexing.db import migrate, session_scope
from indexing.fetch import openalex, s2
from indexing.fetch.http import FetchError
from indexing.fetch.refresh import refresh_citations
from indexing.fetch.walk import run, today
from indexing.ingest import ingest_bytes
from indexing.models import Paper
from indexing.settings import Settings
from tests.replay_server import APIS, Replay, openalex_pages, recorded, s2_pages

pytestmark = pytest.mark.skipif(not APIS.is_dir(), reason="needs ../shared/data/apis")
OLD = date(2026, 1, 15)
ALL = {"cutoff": date(1900, 1, 1), "until": date(2100, 12, 31)}


@pytest.fixture
def fast(tmp_path) -> Settings:
    s = Settings(home=tmp_path / "home", fetch={"openalex_pace": 0, "s2_pace": 0, "s2_api_key": "s2-key",
                                               "openalex_api_key": "oa-key",
                                               "retry": {"backoff_min": 0.01, "backoff_max": 0.05, "timeout": 0.5}})
    migrate(s.db_path)
    return s


def rows(settings) -> dict[str, tuple]:
    with session_scope(settings.db_path) as s:
        return {p.paper_id: (p.citation_count, p.citations_at) for p in s.scalars(select(Paper))}


def age(settings) -> None:
    """Pretend the counts were taken in January."""
    with session_scope(settings.db_path) as s:
        s.execute(update(Paper).values(citations_at=OLD))


def test_s2_batch_refresh_with_nulls_in_request_order(fast, monkeypatch):
    data = recorded("s2/bulk_search_first_page.json")["data"]
    batch_recorded = [p for p in recorded("s2/batch_with_null.json") if p is not None]
    server_papers = {}
    for p in data[:-3] + batch_recorded:  # the last three bulk records are unknown to the batch endpoint
        fresh = dict(p, citationCount=p["citationCount"] + 7)
        server_papers[p["paperId"]] = fresh
        if p["externalIds"].get("DOI"):
            server_papers[f"DOI:{p['externalIds']['DOI']}"] = fresh
    r = Replay(s2=s2_pages(data, per_page=10), papers=server_papers)
    try:
        run(fast, s2.plan(fast, base_url=r.url))
        lines = "\n".join(json.dumps(p) for p in batch_recorded)  # the recorded batch records, as S2 JSONL
        ingest_bytes(lines.encode(), "batch.jsonl", db_path=fast.db_path, fmt="s2")
        ingest_bytes(b'{"id": "native-doi", "title": "A Paper Known by DOI", "year": 2024, "citation_count": 1, '
                     b'"doi": "https://doi.org/10.5555/NATIVE.DOI"}\n{"id": "native-none", "title": "No Ids", '
                     b'"year": 2024, "citation_count": 3}\n', "native.jsonl", db_path=fast.db_path)
        age(fast)
        before = rows(fast)
        monkeypatch.setattr(s2, "BATCH_IDS", 10)
        out = refresh_citations(fast, source="s2", base_url=r.url, **ALL)
        batches = r.requests("paper/batch")
        assert [len(q["body"]["ids"]) for q in batches] == [10, 10, 8]
        assert all(q["params"]["fields"] == "paperId,citationCount" and q["headers"]["x-api-key"] == "s2-key"
                   for q in batches)
        sent = [i for q in batches for i in q["body"]["ids"]]
        assert sent[-1] == "DOI:10.5555/native.doi" and len(sent) == len(set(sent)) == 28
        after = rows(fast)
        unknown = [p["paperId"] for p in data[-3:] if p["paperId"] in after]
        assert out["unknown"] == len(unknown) + 1  # the native paper's DOI is unknown to the server too
        for pid in unknown:
            assert after[pid] == before[pid]  # null: the known count and its date stay
        known = [p for p in data[:-3] if p["paperId"] in after]
        assert all(after[p["paperId"]] == (p["citationCount"] + 7, today()) for p in known)
        assert all(after[p["paperId"]][1] == today() for p in batch_recorded)
        assert out["unaddressable"] == 1 and after["native-none"] == (3, OLD)
        assert out["refreshed"] == len(known) + 3 and out["changed"] == out["refreshed"] and out["requests"] == 3
        assert out["papers"] == out["requested"] + out["unaddressable"]
        again = refresh_citations(fast, source="s2", base_url=r.url, **ALL)  # a rerun skips what today refreshed
        assert again["skipped_fresh"] == out["refreshed"] and again["requested"] == out["unknown"]
        assert (fast.raw_dir / "s2" / f"refresh-{today()}" / "batch-000001.json.gz").exists()
    finally:
        r.close()


def test_s2_batch_answer_of_the_wrong_length_stops(fast):
    r = Replay(s2=s2_pages(recorded("s2/bulk_search_first_page.json")["data"], per_page=25))
    try:
        run(fast, s2.plan(fast, base_url=r.url))
        age(fast)
        r.fault("paper/batch", 0, "truncate-short", "503")  # both retried; then the real answer
        out = refresh_citations(fast, source="s2", base_url=r.url, **ALL)
        assert out["unknown"] == out["requested"] == 24 and out["requests"] == 1
        r.papers = {"x": {}}
        r.faults.clear()
        original = r.httpd.RequestHandlerClass._batch

        def short(self, params, body):
            self._send(200, b"[null]")
        r.httpd.RequestHandlerClass._batch = short
        with pytest.raises(FetchError, match="expected an array of 24 items in request order, got 1"):
            refresh_citations(fast, source="s2", base_url=r.url, force=True, **ALL)
        r.httpd.RequestHandlerClass._batch = original
    finally:
        r.close()


def test_openalex_refresh_by_id_filter_and_doi(fast, minilm):
    records = recorded("openalex/works_cursor_first_page.json")["results"]
    works = {}
    for w in records[:-1]:  # the last one is unknown to the server
        fresh = dict(w, cited_by_count=w["cited_by_count"] + 100)
        works[w["id"].rsplit("/", 1)[-1]] = fresh
        if w["doi"]:
            works[w["doi"].removeprefix("https://doi.org/").lower()] = fresh
    works["10.5555/native.1"] = {"id": "https://openalex.org/W1", "doi": "https://doi.org/10.5555/native.1",
                                 "cited_by_count": 42}
    r = Replay(openalex=openalex_pages(records, per_page=200), works=works)
    try:
        run(fast, openalex.plan(fast, base_url=r.url))
        ingest_bytes(b'{"id": "native-1", "title": "Native Paper", "publication_date": "2005-03-02", '
                     b'"citation_count": 2, "doi": "10.5555/NATIVE.1"}\n', "n.jsonl", db_path=fast.db_path)
        age(fast)
        out = refresh_citations(fast, source="openalex", base_url=r.url, **ALL)
        filters = [q["params"] for q in r.requests("works") if "cursor" not in q["params"]]
        assert filters[0]["filter"].startswith("ids.openalex:W") and "|" in filters[0]["filter"]
        assert filters[0]["select"] == "id,doi,cited_by_count" and filters[0]["api_key"] == "oa-key"
        assert filters[1]["filter"] == "doi:10.5555/native.1"
        after = rows(fast)
        assert after["native-1"] == (42, today())
        last = records[-1]["id"].rsplit("/", 1)[-1]
        assert after[last] == (records[-1]["cited_by_count"], OLD) and out["unknown"] == 1
        assert all(after[w["id"].rsplit("/", 1)[-1]] == (w["cited_by_count"] + 100, today())
                   for w in records[:-1] if w["id"].rsplit("/", 1)[-1] in after)
        # the manifest records the snapshot range of the indexed counts
        manifest = build_index(fast, embedder=minilm, **ALL).manifest
        assert manifest["impact"]["citation_snapshot"] == {"from": OLD.isoformat(), "to": today().isoformat(),
                                                           "undated": 0}
    finally:
        r.close()


def test_citation_dates_through_ingest(fast):
    """A fetched count carries its day; a file's equal count keeps it; a file's different count has no day."""
    line = b'{"id": "p1", "title": "Dated Counts", "year": 2024, "citation_count": %d}\n'
    ingest_bytes(line % 5, "f.jsonl", db_path=fast.db_path)
    assert rows(fast)["p1"] == (5, None)
    ingest_bytes(line % 6, "f.jsonl", db_path=fast.db_path, citations_at=OLD)
    assert rows(fast)["p1"] == (6, OLD)
    report = ingest_bytes(line % 6, "f.jsonl", db_path=fast.db_path)
    assert rows(fast)["p1"] == (6, OLD) and report.unchanged == 1
    ingest_bytes(line % 9, "f.jsonl", db_path=fast.db_path)
    assert rows(fast)["p1"] == (9, None)
    ingest_bytes(b'{"id": "p1", "title": "Dated Counts", "year": 2024}\n', "f.jsonl", db_path=fast.db_path,
                 citations_at=today())
    assert rows(fast)["p1"] == (9, None)  # no count in the record: neither the count nor its day changes
