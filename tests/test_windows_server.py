"""Per-request windows, declared knowledge cutoffs and window-aware analyses, through a real server."""

import time
from pathlib import Path

import httpx
import pytest

from tests.factories import make_old_version
from tests.helpers import ROOT, Server

pytestmark = pytest.mark.server
TOKEN = {"Authorization": "Bearer test-token"}
BUILT = {"start": "2023-06-01", "end": "2025-12-31"}


def ideas(name: str) -> list[dict]:
    import json

    return [json.loads(line) for line in (ROOT / f"data/ideas/{name}.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    server = Server(tmp_path_factory.mktemp("windows") / "home")
    try:
        r = httpx.post(f"{server.url}/v1/papers", headers=TOKEN, timeout=120,
                       files={"file": ("papers.jsonl", (ROOT / "data/papers.jsonl").read_bytes())})
        assert r.status_code == 200, r.text
        job = httpx.post(f"{server.url}/v1/index/rebuild", headers=TOKEN).json()
        deadline = time.monotonic() + 300
        while httpx.get(f"{server.url}/v1/jobs/{job['id']}").json()["status"] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.3)
        yield server
    finally:
        server.stop()


def score(url: str, **body) -> httpx.Response:
    import json

    # ASCII JSON, as a client escaping an unpaired surrogate sends it
    return httpx.post(f"{url}/v1/score", content=json.dumps(body).encode(), timeout=120,
                      headers={"Content-Type": "application/json"})


def test_bad_windows_name_the_field_and_the_allowed_range(srv):
    one = ideas("rag")[:1]
    # 409 where the index decides (a date outside its built range, a window with no paper in it: an end before its
    # start is one), 422 where the value is not a date at all (docs/api.md)
    cases = [
        ({"cutoff": "2023-05-31"}, 409, "cutoff", "outside the built range"),
        ({"cutoff": "2026-02-01"}, 409, "cutoff", "outside the built range"),
        ({"until": "2027-01-01"}, 409, "until", "outside the built range"),
        ({"cutoff": "2024-06-01", "until": "2024-01-01"}, 409, "until", "before the cutoff"),
        ({"cutoff": "2024-02-30"}, 422, "cutoff", "not a date"),
        ({"cutoff": "June 2024"}, 422, "cutoff", "not a date"),
        ({"until": "2024-1-1"}, 422, "until", "not a date"),
        ({"cutoff": "\ud800"}, 422, "cutoff", None),  # an unpaired surrogate must not become a 500
    ]
    for extra, status, field, text in cases:
        r = score(srv.url, system="bad", run="bad", ideas=one, **extra)
        assert r.status_code == status, (extra, r.status_code, r.text)
        detail = r.json()["detail"]
        if text is not None:
            assert detail["field"] == field and text in detail["message"], (extra, detail)
            assert detail["allowed"] == BUILT and "2023-06-01..2025-12-31" in detail["message"]
    r = score(srv.url, ideas=one, cutoff=20240101)  # a number: the schema's own 422
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "cutoff"]
    assert httpx.get(f"{srv.url}/v1/runs").json() == [] or all(
        run["system"] != "bad" for run in httpx.get(f"{srv.url}/v1/runs").json())  # nothing stored

    # a declared knowledge cutoff outside the built range is no silent default
    httpx.put(f"{srv.url}/v1/systems/ancient", json={"knowledge_cutoff": "2022-01-01"}, headers=TOKEN)
    r = score(srv.url, system="ancient", run="bad", ideas=one)
    assert r.status_code == 409 and "declares knowledge cutoff 2022-01-01" in r.json()["detail"]["message"]
    assert r.json()["detail"]["allowed"] == BUILT

    # the sensitivity analysis checks its cutoffs the same way
    r = httpx.get(f"{srv.url}/v1/analysis/cutoffs", params={"cutoffs": "2023-06-01,2022-01-01"}, timeout=120)
    assert r.status_code == 409 and r.json()["detail"]["field"] == "cutoffs"
    assert r.json()["detail"]["allowed"] == BUILT
    r = httpx.get(f"{srv.url}/v1/analysis/cutoffs", params={"cutoffs": "tomorrow"}, timeout=120)
    assert r.status_code == 422 and "not a date" in r.json()["detail"]["message"]


def test_windows_systems_leak_risk_and_window_aware_analyses(srv):
    url = srv.url
    rag, vanilla = ideas("rag"), ideas("vanilla")
    # declaring a system is admin-only and checks its date
    body = {"knowledge_cutoff": "2023-12-01", "model": "sample LLM trained to 2023-11"}
    assert httpx.put(f"{url}/v1/systems/rag-generator", json=body).status_code == 401
    bad = httpx.put(f"{url}/v1/systems/rag-generator", json={"knowledge_cutoff": "late 2023"}, headers=TOKEN)
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "knowledge_cutoff"]
    r = httpx.put(f"{url}/v1/systems/rag-generator", json=body, headers=TOKEN)
    assert r.status_code == 200 and r.json()["knowledge_cutoff"] == "2023-12-01"
    httpx.put(f"{url}/v1/systems/vanilla-generator", json={"knowledge_cutoff": "2024-06-01"}, headers=TOKEN)
    assert [s["name"] for s in httpx.get(f"{url}/v1/systems").json()] == [
        "ancient", "rag-generator", "vanilla-generator"]
    assert httpx.get(f"{url}/v1/systems/nobody").status_code == 404

    # a run of a declared system defaults to its cutoff; the answer names the effective and the built window
    own = score(url, system="rag-generator", run="own", ideas=rag).json()
    assert own["cutoff"] == "2023-12-01" and own["window"] == {"start": "2023-12-01", "end": "2025-12-31"}
    assert own["built_window"] == BUILT and own["cutoff_source"] == "system" and not own["leak_risk"]
    assert own["impact"]["citation_normalisation"] == "global" and own["impact"]["papers"] < 161
    # an earlier cutoff than the declared one is answered, with a leak_risk warning
    early = score(url, system="rag-generator", run="early", ideas=rag, cutoff="2023-06-01").json()
    assert early["leak_risk"] and early["warnings"][0]["code"] == "leak_risk"
    assert "2023-12-01" in early["warnings"][0]["message"] and early["cutoff_source"] == "request"
    # a window that leaves out a target paper no longer matches it
    narrow = score(url, system="rag-generator", run="narrow", ideas=rag, cutoff="2024-06-01",
                   until="2025-06-30").json()
    returned = {m["paper_id"] for idea in narrow["ideas"] for m in idea["matches"]}
    dates = {p: httpx.get(f"{url}/v1/papers/{p}").json()["publication_date"] for p in returned}
    assert returned and all("2024-06-01" <= d <= "2025-06-30" for d in dates.values()), dates
    rag05_early = next(i for i in early["ideas"] if i["id"] == "rag-05")
    rag05_narrow = next(i for i in narrow["ideas"] if i["id"] == "rag-05")
    assert rag05_early["matched"] and "hs-0073" in [m["paper_id"] for m in rag05_early["matches"]]
    assert "hs-0073" not in [m["paper_id"] for m in rag05_narrow["matches"]]  # published 2023-11-16

    stored = httpx.get(f"{url}/v1/runs/early/scores").json()["scores"]
    assert all(s["leak_risk"] and s["window"] == {"start": "2023-06-01", "end": "2025-12-31"} for s in stored)
    assert all(not s["leak_risk"] and s["cutoff"] == "2023-12-01"
               for s in httpx.get(f"{url}/v1/runs/own/scores").json()["scores"])

    score(url, system="vanilla-generator", run="own", ideas=vanilla)  # its own cutoff, 2024-06-01
    # analyses refuse to pool windows unless asked, and say why
    r = httpx.get(f"{url}/v1/analysis/systems")
    assert r.status_code == 409 and "pool_windows" in r.json()["detail"] and "windows" in r.json()["detail"]
    r = httpx.get(f"{url}/v1/analysis/correlations")
    assert r.status_code == 409 and "pool_windows" in r.json()["detail"]
    pooled = httpx.get(f"{url}/v1/analysis/systems", params={"pool_windows": "true"}).json()
    assert pooled["pooled_windows"] and len(pooled["windows"]) == 4
    assert pooled["leak_risk"]["ideas"] == len(rag) and pooled["warnings"][0]["code"] == "leak_risk"
    one = httpx.get(f"{url}/v1/analysis/systems", params={"cutoff": "2023-12-01"}).json()
    assert [g["group"] for g in one["groups"]] == ["rag-generator"] and one["leak_risk"]["ideas"] == 0
    by_window = httpx.get(f"{url}/v1/analysis/systems", params={"group_by": "window"}).json()
    assert {g["group"] for g in by_window["groups"]} == {
        "rag-generator @ 2023-12-01..2025-12-31", "rag-generator @ 2023-06-01..2025-12-31",
        "rag-generator @ 2024-06-01..2025-06-30", "vanilla-generator @ 2024-06-01..2025-12-31"}
    r = httpx.get(f"{url}/v1/analysis/systems", params={"cutoff": "someday"})
    assert r.status_code == 422 and "cutoff" in r.json()["detail"]

    # cutoff sensitivity: per cutoff, per system; leak risk where the cutoff precedes the declared one
    run_ids = [r["id"] for r in httpx.get(f"{url}/v1/runs").json() if r["label"] == "own"]
    params = {"runs": run_ids, "cutoffs": "2023-06-01,2023-12-01,2024-06-01"}
    sens = httpx.get(f"{url}/v1/analysis/cutoffs", params=params, timeout=120).json()
    assert [e["cutoff"] for e in sens["cutoffs"]] == ["2023-06-01", "2023-12-01", "2024-06-01"]
    papers = [e["papers"] for e in sens["cutoffs"]]
    assert papers[0] == 161 and papers[0] > papers[1] > papers[2] > 0
    leak = {(e["cutoff"], g["system"]): g["leak_risk"] for e in sens["cutoffs"] for g in e["groups"]}
    assert leak == {("2023-06-01", "rag-generator"): True, ("2023-06-01", "vanilla-generator"): True,
                    ("2023-12-01", "rag-generator"): False, ("2023-12-01", "vanilla-generator"): True,
                    ("2024-06-01", "rag-generator"): False, ("2024-06-01", "vanilla-generator"): False}
    # the re-scored numbers at a system's own cutoff are its stored run's
    at_own = next(g for g in sens["cutoffs"][1]["groups"] if g["system"] == "rag-generator")
    assert at_own["mean_score"] == pytest.approx(sum(i["score"] for i in own["ideas"]) / len(rag))
    assert sens["stability"][0]["a"] == "rag-generator" and len(sens["stability"][0]["leader_by_cutoff"]) == 3
    png = httpx.get(f"{url}/v1/analysis/cutoffs.png", params=params, timeout=120)
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    csv = httpx.get(f"{url}/v1/analysis/cutoffs", params={**params, "format": "csv"}, timeout=120)
    assert csv.status_code == 200 and csv.text.splitlines()[0].startswith("cutoff,window_end,papers,group")
    assert len(csv.text.splitlines()) == 1 + 3 * 2


def test_old_version_serves_its_window_and_refuses_other_cutoffs(srv):
    home = Path(srv.home)
    indexes = home / "indexes"
    current = (indexes / "CURRENT").read_text().strip()
    make_old_version(indexes, current, "v0900")
    from indexing.versions import set_current

    set_current(indexes, "v0900")
    try:
        one = ideas("rag")[:2]
        deadline = time.monotonic() + 30
        while (r := score(srv.url, system="old", run="old", ideas=one)).json().get("index_version") != "v0900":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert r.status_code == 200 and r.json()["window"] == BUILT
        r = score(srv.url, system="old", run="old", ideas=one, cutoff="2024-01-01")
        assert r.status_code == 409 and "built before per-request windows" in r.json()["detail"]["message"]
        assert "rebuild" in r.json()["detail"]["message"]
    finally:
        set_current(indexes, current)


def test_dashboard_cutoff_panel(srv):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
    import shutil

    chromium = "/usr/bin/chromium"
    if not (Path(chromium).exists() or shutil.which("chromium")):
        pytest.skip("Debian chromium is missing (apt-get install -y chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 1500})
            failed = []
            page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 500 else None)
            page.on("pageerror", lambda e: failed.append(f"page error: {e}"))
            page.goto(srv.url + "/")
            # the default cutoffs: the built start, +6 and +12 months
            page.wait_for_function("document.querySelector('#cutoffs-section').dataset.ready === "
                                   "'2023-06-01,2023-12-01,2024-06-01'", timeout=120_000)
            text = page.locator("#cutoffs-table").inner_text()
            assert "rag-generator" in text and "vanilla-generator" in text and "⚠" in text
            assert page.locator("#cutoffs-table tbody tr").count() == 3
            page.fill("#cutoffs-input", "2024-01-01, 2025-01-01")
            page.click("#cutoffs-form button")
            page.wait_for_function("document.querySelector('#cutoffs-section').dataset.ready === "
                                   "'2024-01-01,2025-01-01'", timeout=120_000)
            page.wait_for_function("() => { const i = document.querySelector('#cutoffs-plot');"
                                   " return i.complete && i.naturalWidth > 300; }", timeout=120_000)
            page.fill("#cutoffs-input", "2022-01-01")
            page.click("#cutoffs-form button")
            page.wait_for_function("!document.querySelector('#cutoffs-error').hidden")
            assert "2023-06-01..2025-12-31" in page.locator("#cutoffs-error").inner_text()
            # mixed windows: the page groups per window and says why, and pooling on request works
            # in the page's words, not the query parameter's
            page.wait_for_function("document.querySelector('#notice').textContent.includes('grouped per system @ "
                                   "window')")
            assert "pool_windows" not in page.locator("#notice").inner_text()
            assert page.locator("#group_by").input_value() == "window"
            assert "pool_windows" not in page.locator("#error").inner_text()
            page.check("#pool_windows")
            page.select_option("#group_by", "system")
            page.wait_for_function("document.querySelector('#error').hidden || "
                                   "!document.querySelector('#error').textContent.includes('windows (')")
            assert not failed, failed
        finally:
            browser.close()
