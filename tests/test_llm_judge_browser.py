"""The dashboard's judge panel in a real browser: two revisions of one judge made here, their quadrants, invalid
counts and flip rates, and the note when they disagree on which system leads (Chromium through Playwright)."""

import shutil
from pathlib import Path

import pytest
from sqlalchemy import select

from indexing.db import session_scope
from indexing.models import Idea, JudgeAnswer, JudgeRevision, JudgeScore, Run, utcnow
from service.llm_judge import prompts
from tests import factories as fx
from tests.helpers import Server

pytestmark = pytest.mark.server

CHROMIUM = "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
    pytest.skip("Debian chromium is missing (apt-get install -y chromium)", allow_module_level=True)

A, B = "tiny@paper-v1", "tiny@reviewers-v1"


def two_revisions(home: Path) -> None:
    """A rates sys-a's ideas 8 and sys-b's 4; B the other way round; one of A's answers is invalid."""
    fx.analysis_store(home)
    with session_scope(home / "hindsight.db") as session:
        for name, version in ((A, prompts.PAPER_V1), (B, prompts.REVIEWERS_V1)):
            session.add(JudgeRevision(name=name, revision=f"local:abc:{version.name}.{version.sha}:t0-expected",
                                      backend="local", model="tiny", weights="abc", prompt=version.name,
                                      prompt_sha=version.sha, decoding="t0-expected", created_at=utcnow()))
        session.add(JudgeAnswer(revision=f"local:abc:paper-v1.{prompts.PAPER_V1.sha}:t0-expected", task="rate",
                                text_hash="0" * 64, question="novelty", source="invalid",
                                reason="rating 12 outside 1-10", created_at=utcnow()))
        for pk, system in session.execute(select(Idea.pk, Run.system).join(Run, Run.id == Idea.run_id)).all():
            high = system == "sys-a"
            session.add(JudgeScore(idea_pk=pk, judge=A, novelty=8 if high else 4, overall=8 if high else 4))
            session.add(JudgeScore(idea_pk=pk, judge=B, novelty=4 if high else 8, overall=4 if high else 8))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    two_revisions(home)
    srv = Server(home, token=None)
    yield srv.url
    srv.stop()


def test_the_judge_panel_shows_revisions_flips_and_the_disagreement(server):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 1500})
            failed = []
            page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 500 else None)
            page.on("pageerror", lambda e: failed.append(f"page error: {e}"))
            page.goto(server + "/")
            page.wait_for_function("document.querySelector('#judging-section').dataset.ready === '2'",
                                   timeout=30_000)
            rows = page.locator("#judging-table tbody tr")
            assert rows.count() == 2
            first = rows.nth(0).inner_text()
            assert A in first and "paper-v1" in first and "\t1\t" in first  # one invalid answer
            assert "sys-a" in first and "sys-b" in rows.nth(1).inner_text()
            flips = page.locator("#judging-flips tbody tr").inner_text()
            assert A in flips and B in flips and "1.00" in flips  # every verdict flips at the cut of 6
            note = page.locator("#judging-note").inner_text()
            assert "disagree on which system leads" in note and "sys-a" in note and "sys-b" in note
            assert page.locator("#judging-empty").is_hidden()
            assert not failed, failed
        finally:
            browser.close()
