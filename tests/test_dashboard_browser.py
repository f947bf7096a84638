"""The dashboard in headless Chromium against the real server on a loopback port."""

import shutil
from pathlib import Path

import pytest

import analysis_fixture as fx
from tests.conftest import ROOT, Server

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
    pytest.skip("Debian chromium is missing (apt-get install -y chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    fx.build(home)
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
                pytest.fail(f"judges never listed; failures: {failed}; error box: {page.locator('#error').text_content()}")
            page.select_option("#judge", "judge-1")
            page.select_option("#dimension", "novelty")
            page.wait_for_function("document.querySelector('#quadrant-section').dataset.ready === 'judge-1:novelty'")
            page.wait_for_function("() => { const i = document.querySelector('#quadrant-plot');"
                                   " return i.complete && i.naturalWidth > 300 && i.src.includes('dimension=novelty'); }")
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
