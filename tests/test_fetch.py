"""Fetching from OpenAlex and Semantic Scholar against a loopback server replaying their recorded bodies, with
faults."""

import functools
import gzip
import json
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import pytest
from sqlalchemy import select

from indexing.db import migrate, session_scope
from indexing.fetch import checkpoint, openalex, s2
from indexing.fetch.http import ApiRejected, BudgetExhausted, FetchError
from indexing.fetch.walk import dry_run, run
from indexing.ingest import ingest_path
from indexing.models import Paper
from indexing.settings import Settings
from tests.factories import corpus
from tests.helpers import ROOT, changed
from tests.replay_server import APIS, Replay, cursor_for, openalex_pages, recorded, s2_pages

pytestmark = pytest.mark.skipif(not APIS.is_dir(), reason="needs ../shared/data/apis")


@pytest.fixture
def fast(tmp_path) -> Settings:
    """Short waits: no pace, backoff 10..50 ms, a 0.5 s timeout."""
    s = Settings(home=tmp_path / "home", service={"admin_token": "test-token"}, fetch={
        "openalex_pace": 0, "s2_pace": 0, "openalex_api_key": "oa-key", "s2_api_key": "s2-key",
        "contact_email": "lab@example.org",
        "retry": {"backoff_min": 0.01, "backoff_max": 0.05, "timeout": 0.5, "attempts": 8, "max_wait": 5}})
    migrate(s.db_path)
    return s




def oa_records() -> list[dict]:
    """The 12 recorded list results, the recorded singleton and the recorded null-title singleton."""
    return (recorded("openalex/works_cursor_first_page.json")["results"]
            + [recorded("openalex/work_single.json"), recorded("openalex/work_single_null_title.json")])


def s2_records() -> list[dict]:
    return recorded("s2/bulk_search_first_page.json")["data"]


@functools.cache
def clean_corpus(source: str, per_page: int) -> dict:
    """The corpus of an uninterrupted walk over the same pages (computed once per module run)."""
    pages = {"openalex": openalex_pages(oa_records(), per_page)} if source == "openalex" else \
        {"s2": s2_pages(s2_records(), per_page)}
    with tempfile.TemporaryDirectory() as tmp:
        s = Settings(home=Path(tmp) / "clean", fetch={"openalex_pace": 0, "s2_pace": 0})
        migrate(s.db_path)
        r = Replay(**pages)
        try:
            run(s, openalex.plan(s, base_url=r.url) if source == "openalex" else s2.plan(s, base_url=r.url))
        finally:
            r.close()
        return corpus(s)


def adds_up(state: dict) -> bool:
    c = state["counts"]
    return c["read"] == c["inserted"] + c["updated"] + c["unchanged"] + c["duplicates"] + c["rejected"] \
        and state["records"] == c["read"]


# --- OpenAlex -------------------------------------------------------------------------------------------------

def test_openalex_recorded_first_and_end_page_verbatim(fast, replay):
    """The recorded first page (cursor=*) then the recorded end page (results [], next_cursor null): stop there."""
    first = recorded("openalex/works_cursor_first_page.json")
    r = replay(openalex=[(APIS / "openalex/works_cursor_first_page.json").read_bytes(),
                         (APIS / "openalex/works_cursor_end_page.json").read_bytes()])
    # the server's cursor for page 2 is ours; the recorded page carries the real one: serve it under that name too
    r.walks["works"][0] = r.walks["works"][0].replace(first["meta"]["next_cursor"].encode(), cursor_for(1).encode())
    result = run(fast, openalex.plan(fast, base_url=r.url))
    reqs = r.requests("works")
    assert len(reqs) == 2  # stopped on next_cursor null, no request after it
    p0, p1 = reqs[0]["params"], reqs[1]["params"]
    assert p0["cursor"] == "*" and p0["per_page"] == "200" and p0["api_key"] == "oa-key"
    assert p0["mailto"] == "lab@example.org" and "mailto:lab@example.org" in reqs[0]["headers"]["User-Agent"]
    assert p0["filter"] == "from_publication_date:2023-06-01,to_publication_date:2025-12-31"
    assert p1["cursor"] == cursor_for(1)
    state = result.as_dict()
    assert state["done"] and state["pages"] == 1 and state["records"] == 12 and adds_up(state)
    assert state["without_abstract"] == 3  # null abstract_inverted_index: kept, counted
    assert state["cost_usd"] == 0.0001  # meta.cost_usd of the recorded list page; the end page carries none
    # the recorded meta.count (429) describes the untrimmed walk: the mismatch is reported, not hidden
    assert state["total"] == 429 and "announced 429" in result.warning
    got = corpus(fast)
    assert len(got) == 11  # W2242043546 is a RePEc copy of W2041234663 (same title and year): merged
    assert got["W2041234663"][2] == date(1999, 10, 1)  # the exact date survives its year-only copy
    assert got["W4235089722"][6] == "10.1111/1468-2346.00131"  # DOI given as a URL
    assert got["W2410431157"][1] == "" and got["W2410431157"][3] == "year+july-1"  # null abstract; 1988-01-01
    assert got["W2410431157"][2] == date(1988, 7, 1)
    assert got["W100927044"][4] is None  # primary_location.source null
    assert got["W4235089722"][3] == "exact" and got["W4235089722"][2] == date(2000, 4, 1)
    raw = sorted((fast.raw_dir / "openalex" / result.key).glob("page-*.json.gz"))
    assert [p.name for p in raw] == ["page-000001.json.gz"]
    assert gzip.decompress(raw[0].read_bytes()) == r.walks["works"][0]  # kept as served


def test_openalex_several_pages_singletons_null_title_and_duplicate_across_pages(fast, replay):
    records = oa_records()
    records.insert(6, records[1])  # the same record again on the next page
    r = replay(openalex=openalex_pages(records, per_page=4))
    result = run(fast, openalex.plan(fast, base_url=r.url))
    state = result.as_dict()
    assert state["pages"] == 4 and state["records"] == 15 and state["total"] == 15 and result.warning is None
    assert adds_up(state) and state["counts"]["rejected"] == 1 and state["counts"]["inserted"] == 12
    assert state["counts"]["unchanged"] == 1  # the duplicate across pages; no second row
    assert len(r.requests("works")) == 5  # four pages and the empty end page
    [error] = state["errors"]
    assert "page-000004.json.gz:3: field 'title': is missing or empty" in error
    got = corpus(fast)
    assert len(got) == 12 and "W4234567890" not in got
    with session_scope(fast.db_path) as s:
        dated = s.scalars(select(Paper.citations_at)).all()
    assert set(dated) == {date.today()}  # every fetched count carries the day it was taken


@pytest.mark.parametrize("faults", [
    ["429-retry-after:1"], ["429"], ["403-slow-down"], ["503"], ["reset"], ["truncate"], ["truncate-short"],
    ["slow:1.5"],
    ["503", "reset", "truncate", "429", "slow:1"],
], ids=lambda f: "+".join(f))
def test_openalex_faults_end_in_the_complete_corpus(fast, replay, faults):
    expected = clean_corpus("openalex", 4)
    r = replay(openalex=openalex_pages(oa_records(), per_page=4))
    r.fault("works", 1, *faults)
    retries = []
    result = run(fast, openalex.plan(fast, base_url=r.url), on_retry=lambda what, wait: retries.append(wait))
    assert corpus(fast) == expected and len(expected) == 12
    assert len(retries) == len(faults) and adds_up(result.as_dict())
    page2 = [q["t"] for q in r.requests("works") if q["params"]["cursor"] == cursor_for(1)]
    assert len(page2) == len(faults) + 1
    if faults == ["429-retry-after:1"]:
        assert retries == [1.0] and page2[1] - page2[0] >= 1.0  # Retry-After honoured


def test_persistent_503_stops_clearly_with_nothing_partial_then_resumes(fast, replay):
    expected = clean_corpus("openalex", 4)
    r = replay(openalex=openalex_pages(oa_records(), per_page=4))
    r.fault("works", 2, *["503"] * fast.fetch.retry.attempts)
    with pytest.raises(FetchError) as err:
        run(fast, openalex.plan(fast, base_url=r.url))
    assert "gave up after 8 attempt(s)" in str(err.value) and "503" in str(err.value)
    assert "api_key=***" in str(err.value) and "oa-key" not in str(err.value)
    assert len(corpus(fast)) == 8  # pages 1 and 2 only; nothing from page 3
    state = checkpoint.load(fast.db_path, openalex.plan(fast, base_url=r.url).key)
    assert (state.pages, state.records, state.cursor, state.done) == (2, 8, cursor_for(2), False)
    run(fast, openalex.plan(fast, base_url=r.url))  # the faults are used up: resume
    assert corpus(fast) == expected
    starts = [q["params"]["cursor"] for q in r.requests("works")]
    assert starts.count("*") == 1 and starts.count(cursor_for(1)) == 1  # resumed at page 3, no page refetched


def test_daily_budget_exhausted_stops_at_once(fast, replay):
    expected = clean_corpus("openalex", 4)
    r = replay(openalex=openalex_pages(oa_records(), per_page=4))
    r.fault("works", 1, "429-budget")
    with pytest.raises(BudgetExhausted) as err:
        run(fast, openalex.plan(fast, base_url=r.url))
    text = str(err.value)
    assert "daily budget is exhausted" in text and "X-RateLimit-Credits-Required" in text and "39957" in text
    assert len(r.requests("works")) == 2  # no retry against a spent budget
    assert len(corpus(fast)) == 4
    run(fast, openalex.plan(fast, base_url=r.url))
    assert corpus(fast) == expected


def test_retry_after_longer_than_allowed_stops(fast, replay):
    r = replay(openalex=openalex_pages(oa_records(), per_page=4))
    r.fault("works", 0, "429-retry-after:3600")
    with pytest.raises(BudgetExhausted, match="asks to wait 3600 s"):
        run(fast, openalex.plan(fast, base_url=r.url))
    assert corpus(fast) == {} and len(r.requests("works")) == 1


def test_bad_filter_400_is_not_retried(fast, replay):
    r = replay(openalex=openalex_pages(oa_records(), per_page=4))
    r.fault("works", 0, "400")
    with pytest.raises(ApiRejected, match="DOESNTEXIST is not a valid field"):
        run(fast, openalex.plan(fast, base_url=r.url, extra_filter="DOESNTEXIST:1"))
    assert len(r.requests("works")) == 1


def test_missing_openalex_key_401_says_which_setting(fast, replay):
    r = replay(openalex=openalex_pages(oa_records(), per_page=4))
    r.fault("works", 0, "401")
    with pytest.raises(ApiRejected, match="API key not found: set HINDSIGHT_OPENALEX_API_KEY"):
        run(fast, openalex.plan(fast, base_url=r.url))
    assert len(r.requests("works")) == 1


def test_s2_no_hits_page_without_data_ends_the_walk(fast, replay):
    r = replay(s2=[b'{"total": 0, "offset": 0}'])  # recorded for /paper/search: no data key at all
    result = run(fast, s2.plan(fast, base_url=r.url))
    assert result.state["done"] and result.state["records"] == 0 and result.warning is None
    assert len(r.requests("paper/search/bulk")) == 1 and corpus(fast) == {}


def test_a_finished_walk_is_not_walked_again_unless_restarted(fast, replay):
    r = replay(openalex=openalex_pages(oa_records(), per_page=4))
    run(fast, openalex.plan(fast, base_url=r.url))
    again = run(fast, openalex.plan(fast, base_url=r.url))
    assert again.already_done and len(r.requests("works")) == 5
    fresh = run(fast, openalex.plan(fast, base_url=r.url), restart=True)
    c = fresh.state["counts"]
    assert not fresh.already_done and c["inserted"] == 0 and c["unchanged"] + c["updated"] == 13
    assert len(r.requests("works")) == 10


def test_openalex_filters_and_dry_run(fast, replay):
    r = replay(openalex=openalex_pages(oa_records(), per_page=4))
    plan = openalex.plan(fast, base_url=r.url, from_date=date(2023, 6, 1), to_date=date(2025, 12, 31),
                         search="retrieval", topics=["T10181"], concepts=["https://openalex.org/C119857082"],
                         source_ids=["S4306420609", "S4306419644"], types=["article", "preprint"])
    out = dry_run(fast, plan)
    assert out["expected_records"] == 14 and out["requests_needed"] == 2 and "api_key=***" in out["request"]
    [probe] = r.requests("works")
    f = probe["params"]["filter"]
    assert "topics.id:T10181" in f and "concepts.id:C119857082" in f and "type:article|preprint" in f
    assert "primary_location.source.id:S4306420609|S4306419644" in f and probe["params"]["search"] == "retrieval"
    assert corpus(fast) == {}  # a dry run ingests nothing


# --- Semantic Scholar -----------------------------------------------------------------------------------------

def test_s2_token_walk_with_recorded_429s(fast, replay):
    expected = clean_corpus("s2", 10)
    r = replay(s2=s2_pages(s2_records(), per_page=10))
    r.fault("paper/search/bulk", 1, "429", "429")  # the recorded 429 body and headers: no Retry-After
    result = run(fast, s2.plan(fast, base_url=r.url))
    assert corpus(fast) == expected and result.warning is None
    reqs = r.requests("paper/search/bulk")
    assert len(reqs) == 5 and "token" not in reqs[0]["params"]  # 3 pages + 2 throttled, stop on token null
    assert all(q["headers"]["x-api-key"] == "s2-key" for q in reqs)
    assert reqs[0]["params"]["fields"] == s2.FIELDS and reqs[0]["params"]["publicationDateOrYear"] == \
        "2023-06-01:2025-12-31"
    state = result.as_dict()
    assert adds_up(state) and state["records"] == 25 and state["counts"]["rejected"] == 1
    assert "field 'publicationDate': is missing, and so is 'year'" in state["errors"][0]
    got = corpus(fast)
    venues = {r["paperId"]: (r["venue"], r["publicationVenue"]) for r in s2_records()}
    blank = [pid for pid, (v, pv) in venues.items() if v == "" and pv is None and pid in got]
    assert blank and all(got[pid][4] is None for pid in blank)  # venue "" with no publicationVenue: no venue
    by_year = [r for r in s2_records() if r["publicationDate"] is None and r["year"]]
    assert by_year and all(got[p["paperId"]][3] != "exact" for p in by_year)  # year-only: the rule is recorded
    corpus_only = [r for r in s2_records() if set(r["externalIds"]) == {"CorpusId"}]
    assert corpus_only and all(isinstance(r["externalIds"]["CorpusId"], int) for r in corpus_only)
    assert all(got[r["paperId"]][6] is None for r in corpus_only)  # CorpusId (an int) alone: kept, no DOI
    assert state["without_abstract"] == sum(not r["abstract"] for r in s2_records()) > 0


def test_s2_walk_cut_short_is_reported(fast, replay):
    r = replay(s2=s2_pages(s2_records(), per_page=10, total=2674))
    result = run(fast, s2.plan(fast, base_url=r.url))
    assert result.state["done"] and "returned 25 records, the API announced 2674" in result.warning
    assert "estimate" in result.warning


def test_s2_title_only_recorded_last_page_rejects_every_row_and_counts_them(fast, replay):
    r = replay(s2=[(APIS / "s2/bulk_search_last_page.json").read_bytes()])
    result = run(fast, s2.plan(fast, base_url=r.url))
    state = result.as_dict()
    assert state["done"] and state["counts"]["rejected"] == 25 and state["counts"]["inserted"] == 0
    assert all("field 'publicationDate'" in e for e in state["errors"]) and adds_up(state)


def test_s2_bad_key_403_stops(fast, replay):
    r = replay(s2=s2_pages(s2_records(), per_page=10))
    r.fault("paper/search/bulk", 0, "403")
    with pytest.raises(ApiRejected, match="x-api-key was refused"):
        run(fast, s2.plan(fast, base_url=r.url))
    assert len(r.requests("paper/search/bulk")) == 1


def test_s2_throttled_without_key_gives_up_with_a_hint(fast, replay):
    keyless = changed(fast, fetch={"s2_api_key": None, "retry": fast.fetch.retry.model_copy(update={"attempts": 3})})
    r = replay(s2=s2_pages(s2_records(), per_page=10))
    r.fault("paper/search/bulk", 0, "429", "429", "429")
    with pytest.raises(FetchError, match="set HINDSIGHT_S2_API_KEY") as err:
        run(keyless, s2.plan(keyless, base_url=r.url))
    assert "Too Many Requests" in str(err.value) and "x-api-key" not in r.requests("paper/search/bulk")[0]["headers"]


# --- ingest of the recorded bodies as files -------------------------------------------------------------------

def test_recorded_pretty_printed_openalex_page_ingests_as_a_file(settings):
    """`hindsight ingest` of a saved API page: the pretty-printed {meta, results} page used to be read as JSONL."""
    report = ingest_path(APIS / "openalex/works_cursor_first_page.json", db_path=settings.db_path,
                         fmt="openalex", skip_invalid=True)
    assert report.read == 12 and report.rejected == 0 and report.inserted == 11


def test_openalex_year_only_padding_is_read_as_a_year(settings):
    report = ingest_path(APIS / "openalex/work_single_null_title.json", db_path=settings.db_path, fmt="openalex",
                         skip_invalid=True)
    assert report.rejected == 1 and "field 'title'" in str(report.errors[0])
    record = recorded("openalex/works_cursor_first_page.json")["results"][4]  # 2010-01-01, a journal
    assert record["publication_date"] == "2010-01-01"
    from indexing.ingest import ingest_bytes
    ingest_bytes(json.dumps(record).encode(), "one.jsonl", db_path=settings.db_path, fmt="openalex")
    assert corpus(settings)["W2077467872"][2:4] == (date(2010, 7, 1), "year+july-1")


def test_a_base_url_that_cannot_work_is_refused_at_once(fast):
    with pytest.raises(ApiRejected, match="must start with http"):
        run(fast, openalex.plan(fast, base_url="ftp://mirror.example/openalex"))
    started = time.monotonic()
    with pytest.raises(FetchError, match="gave up after 2 attempt"):  # nothing listens there: retried, then stops
        run(changed(fast, fetch={"retry": fast.fetch.retry.model_copy(update={"attempts": 2})}), s2.plan(fast, base_url="http://127.0.0.1:9"))
    assert time.monotonic() - started < 5


def test_s2_page_in_another_key_order_on_one_line_with_a_null_item(fast, replay):
    """Ingest does not depend on the page's layout: keys reordered, compact, a null record, a U+2028 in a text."""
    data = [dict(s2_records()[0], abstract="line\u2028separator inside"), None, s2_records()[1]]
    page = json.dumps({"token": None, "data": data, "total": 3}, separators=(",", ":"), ensure_ascii=False)
    r = replay(s2=[page.encode()])
    result = run(fast, s2.plan(fast, base_url=r.url))
    c = result.state["counts"]
    assert (c["read"], c["inserted"], c["rejected"]) == (3, 2, 1)
    assert ":2: field '<json>'" in result.state["errors"][0] and "object" in result.state["errors"][0]
    assert corpus(fast)[s2_records()[0]["paperId"]][1] == "line\u2028separator inside"


@pytest.mark.server
def test_bench_fetch_walk_tiny():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "fetch_walk.py"), "--pages", "2", "--per-page", "20",
                           "--rounds", "1"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ratio fetch/ingest" in proc.stdout and '"works": 40' in proc.stdout
