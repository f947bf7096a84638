"""The demo's home in headless Chromium: `hindsight report` opened from disk with no network request and the figures
`hindsight analyze ... --json` gives, its Markdown variant rendered, the dashboard's link to GET /v1/report."""

import json
import re
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from markdown_it import MarkdownIt

from tests import factories as fx
from tests.helpers import CHROMIUM, ROOT, Server, chromium, page_failures
from tests.helpers import run_cli as hs

pytestmark = pytest.mark.server
ARTIFACTS = ROOT / "test-artifacts"
SECTIONS = ("provenance", "systems", "comparison", "prior-art", "quadrants", "correlations", "distributions",
            "labels")
CLASSES = ("anticipated", "recalled", "already_published", "unrealised")

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
if not (Path(CHROMIUM).exists() or shutil.which("chromium")):
    pytest.skip("Debian chromium is missing (apt-get install -y chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    home = tmp_path_factory.mktemp("demo") / "home"
    return home, fx.demo_home(home)


def analyze(home: Path, *args: str) -> dict:
    out = hs(home, "analyze", *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def rows(page, table: str) -> list[list[str]]:
    return page.eval_on_selector_all(f"#{table} tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))")


def ci(value: float, bounds: list[float]) -> str:
    return f"{value:.3f} [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def p_text(p: float | None) -> str:
    return "–" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"


def test_the_report_opens_offline_and_shows_the_analyses_figures(demo, tmp_path):
    home, _ = demo
    out = tmp_path / "report.html"
    made = hs(home, "report", "--run", "demo", "--judge", "gpt-judge", "--labels", "--out", str(out))
    assert made.returncode == 0, made.stderr
    systems = analyze(home, "systems", "--run", "demo")
    quadrants = analyze(home, "quadrants", "--run", "demo", "--judge", "gpt-judge")
    correlations = analyze(home, "correlations", "--run", "demo", "--judge", "gpt-judge")
    labelled = analyze(home, "systems", "--run", "demo", "--labels")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = chromium(p)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 1000})
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            failures = page_failures(page)
            page.goto(out.as_uri())
            assert requests == [out.as_uri()], requests  # the file itself, and nothing else
            for key in SECTIONS:
                assert page.locator(f"section#{key} table").count() > 0, key
            assert page.locator(".why").count() == 0, page.locator(".why").all_inner_texts()
            assert page.locator("svg.plot").count() == 5
            for box in (page.locator("svg.plot").nth(i).bounding_box() for i in range(5)):
                assert box and box["width"] > 300 and box["height"] > 100
            # provenance: the model, its revision, the matcher's fit and this machine's backend verdict
            status = json.loads(hs(home, "index", "status", "--json").stdout)
            m = status["manifest"]
            index = dict((r[0], r[1]) for r in rows(page, "index-table"))
            assert index["revision"] == m["revision"] and m["model_id"] in index["model"]
            assert index["hybrid matcher fit"].startswith(m["matcher"]["hybrid"]["version"])
            assert index["backend check on this machine"].startswith(
                f"{status['backend_check']['backend']}: {status['backend_check']['verdict']}")
            # systems, their comparison, prior art: as `analyze systems --json` answers
            assert rows(page, "systems-table") == [
                [g["group"], str(g["ideas"]), ci(g["mean_score"], g["ci"]), f"{g['median_score']:.3f}",
                 f"{100 * g['match_rate']:.0f}% ({g['matched']})",
                 *(f"{g['judges'][j]['overall']['mean']:.2f}" for j in systems["judges"])] for g in systems["groups"]]
            assert [r[:2] + r[3:7] for r in rows(page, "comparison-table")] == [
                [c["a"], c["b"], f"{c['mean_a']:.3f}", f"{c['mean_b']:.3f}", p_text(c["mannwhitney_p"]),
                 p_text(c["welch_p"])] for c in systems["comparisons"]]
            shown = rows(page, "prior-art-realised")
            for g, row in zip(systems["groups"], shown, strict=True):
                rates = g["prior_art"]["rates"]["realised"]
                assert row[1:5] == [f"{100 * rates[c]['rate']:.0f}% [{100 * rates[c]['ci'][0]:.0f}-"
                                    f"{100 * rates[c]['ci'][1]:.0f}]" for c in CLASSES]
            assert [r[1] for r in rows(page, "anticipation-table")] == [
                ci(g["prior_art"]["anticipation_score"], g["prior_art"]["anticipation_ci"]) for g in systems["groups"]]
            # quadrants and correlations against the judge
            assert [r[2:] for r in rows(page, "quadrant-counts")] == [
                [f"{c[k]['count']} ({100 * c[k]['share']:.0f}%)" for k in quadrants["quadrants"]]
                for c in quadrants["counts"]]
            assert [r[:5] + r[6:] for r in rows(page, "correlations-table")] == [
                [r["scope"], r["judge"], r["dimension"], str(r["n"]), f"{r['rho']:.2f}", p_text(r["p"])]
                for r in correlations["rows"]]
            # the three estimates, and the matcher measured on the labels
            estimates = rows(page, "estimates-table")
            for g in labelled["groups"]:
                for metric, name in (("realised_rate", "realised rate"), ("direction_rate", "direction rate")):
                    e = g[metric]
                    row = next(r for r in estimates if r[:2] == [g["group"], name])
                    assert row[2] == f"{e['matcher']:.3f}"
                    for cell, est in ((row[3], e["labels_only"]), (row[4], e["ppi"])):
                        assert re.sub(r"\*", "", cell) == ci(est["value"], est["ci"])
                    assert row[5:7] == [str(e["n_labelled"]), str(e["n_unlabelled"])]
            overall = labelled["agreement"]["overall"]["matcher"]["idea"]["realised"]
            assert ["all", "matcher", "idea", "realised", *(str(overall[k]) for k in ("tp", "fp", "fn", "tn"))] in \
                [r[:8] for r in rows(page, "agreement-table")]
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
            assert not failures, failures
        finally:
            browser.close()


def test_the_markdown_variant_renders_its_tables_and_plots(demo, tmp_path):
    home, _ = demo
    out = tmp_path / "report.md"
    made = hs(home, "report", "--run", "demo", "--run", "own-cutoff", "--judge", "gpt-judge", "--labels", "--out",
              str(out))
    assert made.returncode == 0, made.stderr
    assert "grouped per system and window" in made.stderr  # two windows: grouped per window, and said so
    rendered = MarkdownIt("commonmark").enable("table").render(out.read_text())
    assert rendered.count("<table>") >= 12
    assert [h for h in re.findall(r"<h2>([^<]+)</h2>", rendered)] == [
        "Provenance", "Systems", "Comparison", "Prior art", "Quadrants against the judge",
        "Correlations with the judge", "Score distributions", "Estimates from labels"]
    assert "<td>rag-generator @ 2023-12-01..2025-12-31</td>" in rendered
    page_file = tmp_path / "rendered.html"
    page_file.write_text(f"<!doctype html><meta charset='utf-8'><body>{rendered}</body>")
    with sync_api.sync_playwright() as p:
        browser = chromium(p)
        try:
            page = browser.new_page()
            page.goto(page_file.as_uri())
            images = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.getAttribute('src'), i.naturalWidth])")
            assert len(images) == 5 and all(width > 200 for _, width in images), images
            assert page.locator("table").count() == rendered.count("<table>")
        finally:
            browser.close()


def test_the_dashboard_links_the_report_of_the_selected_runs(demo):
    home, runs = demo
    srv = Server(home, token=None)
    try:
        with sync_api.sync_playwright() as p:
            browser = chromium(p)
            try:
                page = browser.new_page(viewport={"width": 1360, "height": 1200})
                failures = page_failures(page)
                page.goto(srv.url + "/")
                page.wait_for_selector("#judge option[value='gpt-judge']", state="attached")
                for name, rid in runs.items():
                    if name.endswith("/own-cutoff"):
                        page.uncheck(f"#runs input[value='{rid}']")
                page.select_option("#judge", "gpt-judge")
                wanted = sorted(str(rid) for name, rid in runs.items() if name.endswith("/demo"))
                page.wait_for_function("(h => h.includes('judge=gpt-judge') && h.split('runs=').length === 3)"
                                       "(document.querySelector('#report-link').href)")
                href = page.get_attribute("#report-link", "href")
                assert sorted(parse_qs(urlparse(href).query)["runs"]) == wanted
                answer = page.goto(srv.url + href)
                assert answer and answer.status == 200
                assert "default-src 'none'" in answer.headers["content-security-policy"]
                assert page.locator("section#quadrants table").count() > 0
                assert page.locator("section#labels table").count() > 0
                assert page.locator("svg.plot").count() == 5
                assert not failures, failures
            finally:
                browser.close()
    finally:
        srv.stop()


def test_every_panel_answers_two_runs_of_one_system_at_two_cutoffs(demo):
    home, runs = demo
    chosen = {runs["rag-generator/own-cutoff"], runs["rag-generator/demo"]}  # cutoffs 2023-12-01 and 2024-06-01
    srv = Server(home, token=None)
    try:
        with sync_api.sync_playwright() as p:
            browser = chromium(p)
            try:
                page = browser.new_page(viewport={"width": 1360, "height": 1400})
                failures = page_failures(page)
                images: list[str] = []
                page.on("requestfailed", lambda r: failures.append(f"failed: {r.url}"))
                page.on("response", lambda r: images.append(f"{r.status} {r.url}")
                        if r.request.resource_type == "image" and r.status >= 400 else None)
                page.goto(srv.url + "/")
                page.wait_for_selector("#runs input", state="attached")
                for rid in runs.values():
                    if rid not in chosen:
                        page.uncheck(f"#runs input[value='{rid}']")
                page.wait_for_function(
                    "() => { const d = (id) => document.getElementById(id).dataset.ready;"
                    " const img = document.getElementById('distribution-plot');"
                    " return document.getElementById('group_by').value === 'window'"
                    " && document.querySelectorAll('#systems-table tbody tr').length === 2"
                    " && d('runview-section') === '24' && d('estimates-section') === 'window'"
                    " && d('cutoffs-section') && d('quadrant-section')"
                    " && ((img.complete && img.naturalWidth > 0)"
                    "     || !document.getElementById('distribution-plot-empty').hidden)"
                    " && document.querySelectorAll('#estimates-table tbody tr').length > 0; }", timeout=180_000)
                page.wait_for_function("() => { const i = document.getElementById('cutoffs-plot');"
                                       " return (i.complete && i.naturalWidth > 0 && !i.hidden)"
                                       " || !document.getElementById('cutoffs-plot-empty').hidden"
                                       " || document.getElementById('cutoffs-section').dataset.ready === 'refused'; }",
                                       timeout=180_000)
                assert "grouped per system @ window" in page.locator("#notice").inner_text()
                groups = [r[0] for r in rows(page, "systems-table")]
                assert [g.split("@")[-1].strip() for g in groups] == ["2023-12-01..2025-12-31",
                                                                      "2024-06-01..2025-12-31"], groups
                assert {r[0] for r in rows(page, "estimates-table")} >= set(groups)  # follows the grouping
                for section in page.locator("main > section").all():
                    text = section.inner_text()
                    drawn = section.locator("img:visible").count() > 0  # a plot is an answer
                    assert (drawn or len(text) > 60) and "loading" not in text, text[:200]
                body = page.locator("body").inner_text()
                assert not re.search(r"\b[45]\d\d\b:", body), re.search(r".{60}\b[45]\d\d\b:.{60}", body)
                assert not re.search(r"--[a-z]", body), re.search(r".{60}--[a-z].{60}", body)
                broken = page.eval_on_selector_all(
                    "img", "imgs => imgs.filter(i => !i.hidden && !(i.complete && i.naturalWidth > 0)).map(i => i.id)")
                assert broken == [] and images == [], (broken, images)
                assert page.eval_on_selector("#runview-table td", "td => getComputedStyle(td).overflowWrap") == \
                    "break-word"
                page.screenshot(path=str(ARTIFACTS / "dashboard-two-cutoffs.png"), full_page=True)
                assert not failures, failures
            finally:
                browser.close()
    finally:
        srv.stop()
