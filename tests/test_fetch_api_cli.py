"""`hindsight fetch` / `hindsight refresh citations` as commands, and the admin jobs over the real server."""

import json
import subprocess
import time

import httpx
import pytest

from tests.helpers import run_cli
from tests.replay_server import APIS, Replay, openalex_pages, recorded, s2_pages

pytestmark = [pytest.mark.server, pytest.mark.skipif(not APIS.is_dir(), reason="needs ../shared/data/apis")]
ADMIN = {"Authorization": "Bearer test-token"}


def oa_records() -> list[dict]:
    return (recorded("openalex/works_cursor_first_page.json")["results"]
            + [recorded("openalex/work_single.json"), recorded("openalex/work_single_null_title.json")])


@pytest.fixture
def replay():
    works = {w["id"].rsplit("/", 1)[-1]: dict(w, cited_by_count=w["cited_by_count"] + 1) for w in oa_records()}
    r = Replay(openalex=openalex_pages(oa_records(), per_page=5),
               s2=s2_pages(recorded("s2/bulk_search_first_page.json")["data"], per_page=10), works=works,
               sources={"neurips": {"id": "https://openalex.org/S4306420609",
                                    "display_name": "Neural Information Processing Systems"}})
    yield r
    r.close()


FAST_FETCH = {"HINDSIGHT_OPENALEX_PACE": "0", "HINDSIGHT_S2_PACE": "0", "HINDSIGHT_FETCH_BACKOFF_MIN": "0.01",
              "HINDSIGHT_FETCH_BACKOFF_MAX": "0.02", "HINDSIGHT_OPENALEX_API_KEY": "oa-secret"}


def cli(home, *args, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli(home, *args, env=FAST_FETCH | (env or {}), timeout=120)


def test_cli_dry_run_fetch_stop_and_refresh(tmp_path, replay):
    home = tmp_path / "home"
    dry = cli(home, "fetch", "openalex", "--base-url", replay.url, "--venue", "NeurIPS", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    out = json.loads(dry.stdout)
    assert out["expected_records"] == 14 and out["requests_needed"] == 2  # 200 a page, then the end page
    assert "primary_location.source.id:S4306420609" in out["request"] and "api_key=***" in out["request"]
    assert "oa-secret" not in dry.stdout + dry.stderr

    replay.fault("works", 1, "503", "503", "503")
    stopped = cli(home, "fetch", "openalex", "--base-url", replay.url, env={"HINDSIGHT_FETCH_ATTEMPTS": "3"})
    said = " ".join(stopped.stderr.split())
    assert stopped.returncode == 1 and "gave up after 3 attempt(s); last error: 503 503 Service Unavailable" in said
    assert "run the same command again to resume" in said

    done = cli(home, "fetch", "openalex", "--base-url", replay.url, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["done"] and result["pages"] == 3 and result["counts"]["inserted"] == 12
    assert result["counts"]["rejected"] == 1 and result["requests"] == 3  # resumed at page 2

    table = cli(home, "fetch", "s2", "--base-url", replay.url, "--from", "2023-06-01", "--to", "2025-12-31")
    assert table.returncode == 0 and "inserted" in table.stderr and "24" in table.stderr

    walks = json.loads(cli(home, "fetch", "status", "--json").stdout)["walks"]
    assert sorted((w["source"], w["done"], w["records"]) for w in walks) == [("openalex", True, 14), ("s2", True, 25)]

    bad = cli(home, "fetch", "s2", "--from", "June 2023")
    assert bad.returncode == 2 and "is not a date" in " ".join(bad.stderr.split())

    refreshed = cli(home, "refresh", "citations", "--source", "openalex", "--base-url", replay.url, "--cutoff",
                    "1900-01-01", "--force", "--json")
    assert refreshed.returncode == 0, refreshed.stderr
    r = json.loads(refreshed.stdout)
    assert r["refreshed"] == 12 and r["changed"] == 12  # the OpenAlex works, through ids.openalex
    assert r["unaddressable"] == 3 and r["unknown"] == 21  # S2 papers: by DOI (unknown here), or no usable id


def test_admin_jobs_fetch_and_refresh(tmp_path, replay, server_factory):
    srv = server_factory(tmp_path / "home", env={"HINDSIGHT_OPENALEX_URL": replay.url, "HINDSIGHT_S2_URL": replay.url,
                                                 "HINDSIGHT_OPENALEX_PACE": "0", "HINDSIGHT_S2_PACE": "0",
                                                 "HINDSIGHT_FETCH_BACKOFF_MIN": "0.01",
                                                 "HINDSIGHT_FETCH_ATTEMPTS": "2", "HINDSIGHT_CUTOFF": "1900-01-01"})
    assert httpx.post(f"{srv.url}/v1/papers/fetch", json={"source": "openalex"}).status_code == 401
    assert httpx.post(f"{srv.url}/v1/papers/fetch", json={"source": "crossref"}, headers=ADMIN).status_code == 422

    def finish(job: dict) -> dict:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = httpx.get(f"{srv.url}/v1/jobs/{job['id']}").json()
            if got["status"] in ("succeeded", "failed"):
                return got
            time.sleep(0.1)
        raise AssertionError("job did not finish")

    replay.fault("works", 0, "429-budget")
    failed = finish(httpx.post(f"{srv.url}/v1/papers/fetch", json={"source": "openalex"}, headers=ADMIN).json())
    assert failed["status"] == "failed" and "daily budget is exhausted" in failed["error"]

    started = httpx.post(f"{srv.url}/v1/papers/fetch", json={"source": "openalex", "venues": ["NeurIPS"]},
                         headers=ADMIN)
    assert started.status_code == 202
    job = finish(started.json())
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"stage": "fetch", "done": 14, "total": 14}
    assert job["result"]["counts"]["inserted"] == 12 and job["result"]["done"]
    assert job["result"]["venues"][0]["id"] == "S4306420609"
    assert "primary_location.source.id:S4306420609" in replay.requests("works")[-1]["params"]["filter"]
    paper = httpx.get(f"{srv.url}/v1/papers/W4235089722").json()
    assert paper["citations_at"] is not None and paper["citation_count"] == 22

    refresh = finish(httpx.post(f"{srv.url}/v1/papers/refresh-citations", headers=ADMIN,
                                json={"source": "openalex", "force": True}).json())
    assert refresh["status"] == "succeeded" and refresh["result"]["refreshed"] == 12
    assert httpx.get(f"{srv.url}/v1/papers/W4235089722").json()["citation_count"] == 23
