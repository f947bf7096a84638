"""The dashboard in headless Chromium against the real server on a loopback port."""

import json
import shutil
from pathlib import Path

import httpx
import pytest

from tests import factories as fx
from tests.helpers import ROOT, Server

pytestmark = pytest.mark.server
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
    pytest.skip("Debian chromium is missing (apt-get install -y chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    fx.analysis_store(home)
    srv = Server(home, token=None)
    yield srv.url
    srv.stop()


def test_dashboard_shows_plot_and_quadrant_tables(server):
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 1500})
            failed = []
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 500 else None)
            page.on("pageerror", lambda e: failed.append(f"page error: {e}"))
            page.goto(server + "/")
            try:
                page.wait_for_selector("#judge option[value='judge-1']", state="attached", timeout=10_000)
            except sync_api.TimeoutError:
                box = page.locator('#error').text_content()
                pytest.fail(f"judges never listed; failures: {failed}; error box: {box}")
            page.select_option("#judge", "judge-1")
            page.select_option("#dimension", "novelty")
            page.wait_for_function("document.querySelector('#quadrant-section').dataset.ready === 'judge-1:novelty'")
            page.wait_for_function("() => { const i = document.querySelector('#quadrant-plot');"
                                   " return i.complete && i.naturalWidth > 300"
                                   " && i.src.includes('dimension=novelty'); }")
            assert page.locator("#error").is_hidden(), page.locator("#error").text_content()
            # the counts table names both systems and all four quadrants
            counts = page.locator("#counts-table").inner_text()
            for word in ("sys-a", "sys-b", "True Positive", "Hidden Gem", "Overhyped", "True Negative"):
                assert word in counts
            assert page.locator(".quad-list").count() == 4
            assert page.locator(".quad-list tbody tr").count() > 0
            assert "judge-1 novelty >" in page.locator("#cuts").inner_text()
            assert page.locator("#systems-table tbody tr").count() == 2
            # clicking an idea opens its matches
            page.locator(".quad-list[data-quadrant='true_positive'] tbody tr").first.click()
            page.wait_for_selector("#matches-table tbody tr")
            assert "Best " in page.locator("#matches-table").inner_text()
            page.screenshot(path=str(ARTIFACTS / "dashboard-idea.png"))
            page.keyboard.press("Escape")
            page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
            assert not failed, f"requests failed: {failed}"
        finally:
            browser.close()
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000


def make_hybrid(home: Path) -> str:
    """Turn one stored score into a hybrid one, as the hybrid matcher stores it; returns its idea id."""
    from sqlalchemy import select

    from indexing.db import session_scope
    from indexing.models import Idea, Score
    from indexing.settings import Settings

    with session_scope(Settings(home=home).db_path) as session:
        score = session.scalars(select(Score).where(Score.matched.is_(True)).order_by(Score.id)).first()
        score.matcher, score.matcher_version = "hybrid", "hybrid-test-1"
        score.thresholds = {"realised": {"facets": 0.5, "text": 0.6}, "direction": {"facets": 0.5, "text": 0.5}}
        score.direction_score, score.n_matches, score.n_direction_matches = 0.9, 1, 2
        score.warnings, score.shape = ["very short (5 distinct content words)", "judged for direction only"], "facets"
        for i, m in enumerate(score.matches):
            m.p_realised, m.p_direction, m.p_method = (0.91, 0.97, 0.938) if i == 0 else (0.12, 0.64, 0.187)
            m.realised, m.direction = i == 0, True
            m.evidence_sentence = f"We route tokens to sparse experts ({m.paper_id})."
            m.problem_sentence = "Dense layers waste compute." if i == 0 else None
            m.shared_terms = ["route", "sparse", "experts"]
        return session.get(Idea, score.idea_pk).idea_id, score.idea_pk


def test_idea_drill_down_shows_hybrid_probabilities_and_evidence(tmp_path):
    home = tmp_path / "home"
    fx.analysis_store(home)
    idea_id, idea_pk = make_hybrid(home)
    srv = Server(home, token=None)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page(viewport={"width": 1360, "height": 1200})
                errors = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(srv.url + "/")
                # the run view marks the idea that has warnings, and names them on hover
                page.wait_for_function("Number(document.querySelector('#runview-section').dataset.ready) > 0")
                assert page.locator("#runview-table .warn").count() == 1
                assert page.locator(f"#runview-table tr[data-idea='{idea_pk}'] .warn").get_attribute("title") == \
                    "very short (5 distinct content words)\njudged for direction only"
                page.wait_for_function("typeof openIdea === 'function'")
                page.evaluate(f"openIdea({idea_pk})")
                page.wait_for_selector("#matches-table[data-matcher='hybrid'] tbody tr")
                table = page.locator("#matches-table").inner_text()
                for text in ("p realised", "p direction", "0.910", "0.640", "We route tokens to sparse experts",
                             "shared: route, sparse, experts", "p method", "0.938", "0.187",
                             "problem: Dense layers waste compute."):
                    assert text in table, (text, table)
                warnings = page.locator("#idea-warnings li").all_inner_texts()
                assert warnings == ["very short (5 distinct content words)", "judged for direction only"]
                line = page.locator("#idea-detail p.muted").first.inner_text()
                assert "hybrid matcher hybrid-test-1" in line and "direction 0.900" in line and "facets 0.500" in line
                page.screenshot(path=str(ARTIFACTS / "dashboard-idea-hybrid.png"))
                assert not errors, errors
            finally:
                browser.close()
    finally:
        srv.stop()


def generator_home(home: Path, plans: Path) -> None:
    """A home as a new user has it: the sample corpus, an index, AI-Researcher plans scored, no judge scores."""
    from tests.helpers import run_cli as hs

    for n, line in enumerate((ROOT / "data/ideas/sample.jsonl").read_text().splitlines()[:9]):
        idea = json.loads(line)
        topic = ("retrieval", "reasoning", "efficiency")[n % 3]
        (plans / topic).mkdir(parents=True, exist_ok=True)
        (plans / topic / f"{idea['id']}.json").write_text(json.dumps({
            "topic_description": topic, "idea_name": idea["id"],
            "full_experiment_plan": {"Title": f"Plan {idea['id']}", "Problem Statement": idea["problem"],
                                     "Proposed Method": idea["method"],
                                     "Step-by-Step Experiment Plan": {"Step 1": "Build it.", "Step 2": "Test it."}}}))
    assert hs(home, "ingest", str(ROOT / "data/papers.jsonl")).returncode == 0
    assert hs(home, "index", "build").returncode == 0
    out = hs(home, "score", str(plans), "--system", "ai-researcher", "--run", "plans")
    assert out.returncode == 0, out.stderr


def test_run_view_and_drill_down_without_judge_scores(tmp_path):
    home = tmp_path / "home"
    generator_home(home, tmp_path / "experiment_plans")
    srv = Server(home, token=None)
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page(viewport={"width": 1360, "height": 1600})
                failed = []
                page.on("pageerror", lambda e: failed.append(f"page error: {e}"))
                page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 500 else None)
                page.goto(srv.url + "/")
                page.wait_for_function("document.querySelector('#runview-section').dataset.ready === '9'")
                rows = page.locator("#runview-table tbody tr")
                assert rows.count() == 9
                text = page.locator("#runview-table").inner_text()
                for word in ("retrieval/idea-01", "Plan idea-01", "retrieval", "reasoning", "efficiency"):
                    assert word in text, word
                # filter by topic, then by text
                page.select_option("#runview-topic", "reasoning")
                assert rows.count() == 3 and "3 of 9 ideas shown" in page.locator("#runview-count").inner_text()
                page.select_option("#runview-topic", "")
                page.fill("#runview-filter", "idea-04")
                assert rows.count() == 1
                page.fill("#runview-filter", "")
                # sort by idea id: ascending, then descending
                page.click("#runview-table th[data-key='idea_id']")
                ids = [rows.nth(i).locator("td").first.inner_text() for i in range(9)]
                assert ids == sorted(ids)
                page.click("#runview-table th[data-key='idea_id']")
                assert [rows.nth(i).locator("td").first.inner_text() for i in range(9)] == sorted(ids, reverse=True)
                # the quadrant panel says what it needs; no image is requested
                page.wait_for_function("document.querySelector('#quadrant-section').dataset.ready === 'no-judges'")
                assert "Quadrants need judge scores" in page.locator("#quadrant-empty").inner_text()
                assert page.locator("#quad-layout").is_hidden()
                assert page.locator("#quadrant-plot").get_attribute("src") is None
                assert page.locator("#error").is_hidden(), page.locator("#error").text_content()
                # the corpus panel: papers per month of the index window, venues, known citations
                corpus = httpx.get(srv.url + "/v1/corpus").json()
                page.wait_for_function("document.querySelector('#corpus-section').dataset.ready")
                assert page.locator("#corpus-section").get_attribute("data-ready") == str(corpus["papers"])
                assert page.locator("#corpus-months .bar").count() == 31  # 2023-06 .. 2025-12
                assert "with a known citation count" in page.locator("#corpus-summary").inner_text()
                assert page.locator("#corpus-venues tbody tr").count() >= 2
                page.screenshot(path=str(ARTIFACTS / "dashboard-run-view.png"), full_page=True)
                # a row opens the drill-down with the idea's origin and its matches
                page.locator("#runview-table tbody tr").first.click()
                page.wait_for_selector("#matches-table tbody tr")
                assert "Plan idea-" in page.locator("#idea-origin").inner_text()
                assert "ai-researcher" in page.locator("#idea-origin").inner_text()
                assert page.locator("#matches-table tbody tr").count() > 0
                page.screenshot(path=str(ARTIFACTS / "dashboard-run-view-idea.png"))
                assert not failed, failed
            finally:
                browser.close()
    finally:
        srv.stop()
