"""Prior art on the dashboard in headless Chromium against the real server: the drill-down puts both lists of papers
on one timeline with the cutoff and the knowledge cutoff marked, and lists the look-back side; the labelling view
shows a drawn idea's look-back candidates marked as such with the same three choices, and a label written there is
stored on the look-back side."""

import shutil
from pathlib import Path

import httpx
import pytest

from tests.factories import PRIOR_ART_CUTOFF, prior_art_version
from tests.helpers import CHROMIUM, ROOT, Server, chromium, open_labelling_view, page_failures

pytestmark = pytest.mark.server
ARTIFACTS = ROOT / "test-artifacts"
AUTH = {"Authorization": "Bearer test-token"}
KNOWLEDGE_CUTOFF = "2023-01-01"  # before the scoring cutoff, so that both lines show

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
    pytest.skip("Debian chromium is missing (apt-get install -y chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory, minilm):
    home = tmp_path_factory.mktemp("prior-art-browser") / "home"
    ideas = prior_art_version(home, minilm)
    srv = Server(home)
    assert httpx.put(f"{srv.url}/v1/systems/gen", json={"knowledge_cutoff": KNOWLEDGE_CUTOFF},
                     headers=AUTH).status_code == 200
    answer = httpx.post(f"{srv.url}/v1/score", json={
        "system": "gen", "run": "pa", "cutoff": PRIOR_ART_CUTOFF, "ideas": list(ideas.values())}, timeout=120)
    assert answer.status_code == 200, answer.text
    scored = answer.json()
    made = httpx.post(f"{srv.url}/v1/labels/draws", json={"run": "pa", "n": len(ideas), "seed": 3},
                      headers=AUTH).json()
    yield srv, scored, made
    srv.stop()


def test_drill_down_shows_both_sides_on_one_timeline(served):
    srv, scored, _ = served
    classes = {i["id"]: i["prior_art"]["class_realised"] for i in scored["ideas"]}
    assert classes["recalled"] == "recalled"  # the planted idea realised on both sides
    runs = httpx.get(f"{srv.url}/v1/runs").json()
    run_id = next(r["id"] for r in runs if r["label"] == "pa")
    listing = httpx.get(f"{srv.url}/v1/runs/{run_id}/ideas").json()
    rows = listing["ideas"] if isinstance(listing, dict) else listing
    pk = next(r["idea_pk"] for r in rows if r["idea_id"] == "recalled")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = chromium(p)
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 1400})
            failures = page_failures(page)
            page.goto(srv.url + "/")
            # the systems panel: the four classes of the system, as the analysis gives them
            row = page.locator("#prior-art-classes tbody tr[data-group='gen']")
            row.wait_for()
            systems = httpx.get(f"{srv.url}/v1/analysis/systems", params={"runs": run_id}).json()
            rates = systems["groups"][0]["prior_art"]["rates"]["realised"]
            for cls in ("anticipated", "recalled", "already_published", "unrealised"):
                text = row.locator(f"td[data-class='{cls}']").inner_text()
                assert text.startswith(f"{100 * rates[cls]['rate']:.0f}% ({rates[cls]['n']})"), (cls, text)
            page.wait_for_function("Number(document.querySelector('#runview-section').dataset.ready) > 0")
            page.click(f"#runview-table tr[data-idea='{pk}']")
            page.wait_for_selector("#idea-timeline svg")
            timeline = page.locator("#idea-timeline svg")
            # both lists on one axis: dots after the cutoff and hollow ones before it, one per retrieved paper
            after = timeline.locator("circle[data-side='after']").count()
            before = timeline.locator("circle[data-side='before']").count()
            detail = httpx.get(f"{srv.url}/v1/analysis/ideas/{pk}").json()
            assert after == len([m for m in detail["matches"] if m["publication_date"]]) > 0
            assert before == len(detail["prior_art"]["matches"]) > 0
            # the cutoff and the knowledge cutoff are marked and labelled
            assert timeline.locator("line.tl-cutoff").count() == 1
            assert timeline.locator("line.tl-knowledge").count() == 1
            labels = [t.text_content() for t in timeline.locator("text").all()]  # SVG: no innerText
            assert f"cutoff {PRIOR_ART_CUTOFF}" in labels and f"knowledge cutoff {KNOWLEDGE_CUTOFF}" in labels
            # the cutoff line lies right of every look-back dot and left of every forward one
            x_cut = float(timeline.locator("line.tl-cutoff").get_attribute("x1"))
            xs_before = [float(c.get_attribute("cx")) for c in timeline.locator("circle[data-side='before']").all()]
            xs_after = [float(c.get_attribute("cx")) for c in timeline.locator("circle[data-side='after']").all()]
            assert max(xs_before) < x_cut <= min(xs_after)
            # a realised paper on each side (the idea is recalled): coloured as realised
            assert timeline.locator("circle.tl-realised[data-side='before']").count() >= 1
            assert timeline.locator("circle.tl-realised[data-side='after']").count() >= 1
            # the look-back list, with its class and each paper against the knowledge cutoff
            assert page.inner_text("#idea-class") == "recalled"
            table = page.locator("#prior-art-table")
            assert table.locator("tbody tr").count() == before
            periods = {r.get_attribute("data-period") for r in table.locator("tbody tr").all()}
            assert periods <= {"before_knowledge_cutoff", "after_knowledge_cutoff"} and periods
            page.screenshot(path=str(ARTIFACTS / "prior-art-drill-down.png"))
            assert not failures, failures
        finally:
            browser.close()


def test_labelling_view_shows_the_look_back_side_with_the_same_three_choices(served):
    srv, _, made = served
    draw = made["draws"][0]
    with sync_api.sync_playwright() as p:
        browser = chromium(p)
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 1600})
            failures = open_labelling_view(page, srv.url, draw["run_id"])
            page.wait_for_selector("#labels-card[data-ready='1'] #labels-before .candidate")
            idea_id = page.get_attribute("#labels-card", "data-idea")
            shown_after = page.locator("#labels-after .candidate").count()
            marked = page.locator("#labels-before .candidate.before-cutoff")
            assert marked.count() == page.locator("#labels-before .candidate").count() > 0
            assert page.locator("#labels-after .candidate.before-cutoff").count() == 0
            assert "before the cutoff" in marked.first.locator(".side-badge").inner_text()
            # the same three choices on a look-back candidate; a click writes it at once
            buttons = marked.first.locator("button[data-choice]")
            assert [b.get_attribute("data-choice") for b in buttons.all()] == ["realised", "direction", "none"]
            paper = marked.first.get_attribute("data-paper")
            marked.first.locator("button[data-choice='direction']").click()
            page.wait_for_selector(f"#labels-before .candidate[data-paper='{paper}'][data-label='direction']")
            # the keys run over both lists: the first look-back candidate is number shown_after + 1
            page.click("#labels-card h3")
            page.keyboard.press(str(shown_after + 1))
            assert page.locator("#labels-before .candidate.selected").get_attribute("data-paper") == paper
            # the forward side of the same idea labelled too (none): it is labelled on both sides, so it enters the
            # class rates of the estimates panel, and the look-back agreement names it
            item = httpx.get(f"{srv.url}/v1/labels/draws/{draw['draw']}/item",
                             params={"annotator": "reader", "position": 1}).json()["idea"]
            assert item["idea_id"] == idea_id
            for c in item["candidates"]:
                assert httpx.post(f"{srv.url}/v1/labels", headers=AUTH, json={
                    "run": "pa", "idea_id": idea_id, "paper_id": c["paper_id"], "label": "none",
                    "annotator": "reader"}).status_code == 200
            page.evaluate("labEstimates()")
            row = page.locator("#estimates-table tr[data-metric='class:unrealised']")
            row.wait_for()
            page.wait_for_function("document.querySelector(\"#estimates-table tr[data-metric='class:unrealised']\")"
                                   ".innerText.includes('labelled on both sides')")
            assert "1 / " in row.inner_text()
            assert "Before the cutoff (look-back side, 1 ideas)" in page.inner_text("#estimates-agreement")
            page.screenshot(path=str(ARTIFACTS / "prior-art-labelling.png"))
            assert not failures, failures
        finally:
            browser.close()
    # stored on the look-back side: the sheet of the draw has that paper on a 'before' row, and the label is there
    sheet = httpx.get(f"{srv.url}/v1/labels/draws/{draw['draw']}/sheet").text
    assert '"side": "before"' in sheet and paper in sheet
    exported = httpx.get(f"{srv.url}/v1/labels/export", params={"run": "pa"}).text
    assert f'"idea_id": "{idea_id}", "paper_id": "{paper}", "label": "direction"' in exported
