"""`hindsight report` and GET /v1/report in process: every section shows figures or says why, the page requests
nothing, the figures are the analyses' own, the Markdown variant's tables render and its plots are SVG files."""

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from markdown_it import MarkdownIt

from indexing.db import session_scope
from indexing.settings import Settings
from service.app import create_app
from service.report.files import write_report
from service.report.gather import ReportRequest, gather
from service.report.html import breakable
from service.report.sections import sections
from tests import factories as fx

SECTIONS = ("provenance", "systems", "comparison", "prior-art", "quadrants", "correlations", "distributions",
            "labels")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("report") / "home"
    fx.analysis_store(home)
    return home


@pytest.fixture(scope="module")
def client(store):
    with TestClient(create_app(Settings(home=store))) as c:
        yield c


def section_of(page: str, key: str) -> str:
    found = re.search(rf'<section id="{key}">(.*?)</section>', page, re.S)
    assert found, f"no section {key}"
    return found.group(1)


def test_every_section_shows_figures_or_says_why_and_the_page_requests_nothing(client):
    r = client.get("/v1/report")  # two judges and none chosen; no prior art, no labels, no index on disk
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in r.headers["content-security-policy"]
    page = r.text
    for key in SECTIONS:
        body = section_of(page, key)
        assert "<table" in body or re.search(r'<p class="why">[A-Z][^<]+\.</p>', body), key
    assert "Several judges scored these ideas (judge-1, judge-2)" in section_of(page, "quadrants")
    assert "Estimates from labels were not asked for" in section_of(page, "labels")
    assert "scored with prior art" in section_of(page, "prior-art")
    assert "index version v1 is no longer on this machine" in section_of(page, "provenance")
    # nothing to fetch: no script, stylesheet, image or font reference, plots inline
    assert not re.search(r"<(script|link|img|iframe)\b|\bsrc=|url\((?!#)|@import", page)
    assert page.count("<svg ") == 2  # the systems plot and the distributions
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "two elements share an id"


def test_with_a_judge_the_quadrants_and_correlations_are_the_analyses_answers(client):
    page = client.get("/v1/report", params={"judge": "judge-1", "dimension": "novelty"}).text
    quadrants = client.get("/v1/analysis/quadrants", params={"judge": "judge-1", "dimension": "novelty"}).json()
    counts = section_of(page, "quadrants")
    for c in quadrants["counts"]:
        cells = [f"{c[k]['count']} ({100 * c[k]['share']:.0f}%)" for k in quadrants["quadrants"]]
        assert re.search(r"<tr><td>" + re.escape(breakable(c["group"])) + r"</td><td>\d+[^<]*</td>"
                         + "".join(f"<td>{re.escape(x)}</td>" for x in cells) + "</tr>", counts), c["group"]
    rows = client.get("/v1/analysis/correlations", params={"judge": "judge-1"}).json()["rows"]
    body = section_of(page, "correlations")
    for r in rows:
        assert (f"<td>{breakable(r['scope'])}</td><td>judge-1</td><td>{r['dimension']}</td><td>{r['n']}</td>"
                f"<td>{r['rho']:.2f}</td>") in body
    assert page.count("<svg ") == 3


def test_an_unknown_run_is_404_and_a_bad_date_422(client):
    assert client.get("/v1/report", params={"runs": 999}).status_code == 404
    assert client.get("/v1/report", params={"cutoff": "soon"}).status_code == 422


def test_long_ids_may_wrap_at_slashes_and_underscores():
    assert breakable("bias_prompting/self<check>") == "bias_<wbr>prompting/<wbr>self&lt;check&gt;"


def test_the_markdown_variant_renders_its_tables_and_writes_its_plots_beside_it(store, tmp_path):
    settings = Settings(home=store)
    with session_scope(settings.db_path) as session:
        report = gather(session, settings, ReportRequest(judge="judge-1"))
    written = write_report(report, tmp_path / "out" / "report.md")
    assert written[0] == tmp_path / "out" / "report.md"
    assert {p.name for p in written[1:]} == {"report-systems.svg", "report-distributions.svg",
                                             "report-quadrants.svg"}
    for svg in written[1:]:
        assert ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    text = written[0].read_text()
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    expected = [t for s in sections(report) for t in s.tables]
    assert rendered.count("<table>") == len(expected) > 5
    for name in ("report-systems.svg", "report-quadrants.svg"):
        assert f'<img src="{name}"' in rendered
    systems = report.systems
    assert systems is not None
    for g in systems["groups"]:
        assert f"<td>{g['group']}</td>\n<td>{g['ideas']}</td>\n<td>{g['mean_score']:.3f} [{g['ci'][0]:.3f}, " \
               f"{g['ci'][1]:.3f}]</td>" in rendered
    for key in ("labels", "prior-art"):  # an empty section is a quoted sentence
        assert re.search(r"<blockquote>\n<p>[A-Z][^<]+\.</p>", rendered.split("<h2>")[SECTIONS.index(key) + 1])


def test_the_command_writes_html_and_refuses_another_suffix(run_cli_here, settings, tmp_path):
    fx.analysis_store(settings.home)
    bad = run_cli_here("report", "--run", "r1", "--out", str(tmp_path / "report.pdf"))
    assert bad.exit_code != 0 and "must end in .html or .md" in bad.output
    missing = run_cli_here("report", "--run", "nope", "--out", str(tmp_path / "report.html"))
    assert missing.exit_code != 0 and "--run: no run 'nope'" in missing.output
    ok = run_cli_here("report", "--run", "r1", "--judge", "judge-2", "--out", str(tmp_path / "report.html"))
    assert ok.exit_code == 0, ok.output
    page = (tmp_path / "report.html").read_text()
    assert "judge-2 · overall" in section_of(page, "quadrants")
