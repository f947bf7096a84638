"""Prior art end to end: POST /v1/score on the real server over a planted corpus with papers on both sides of the
cutoff (classes, the look-back window beside the forward one, clipping, `unknown` with its warning, the flag off, a
file upload), the CLI's `score` output, and the analyses' prior-art blocks over HTTP."""

import json

import httpx
import pytest

from tests.factories import PRIOR_ART_CUTOFF, prior_art_version
from tests.helpers import run_cli

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def planted(tmp_path_factory, minilm):
    home = tmp_path_factory.mktemp("prior-art-e2e") / "home"
    return home, prior_art_version(home, minilm)


@pytest.fixture
def server(planted, server_factory):
    return server_factory(planted[0])


def score(server, ideas: dict, **body) -> dict:
    answer = httpx.post(f"{server.url}/v1/score", json={"system": "planted", "run": "r", "ideas": list(ideas.values()),
                                                        "matcher": "dense", **body}, timeout=300)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_score_answers_both_sides_with_classes_windows_and_warnings(planted, server):
    _, ideas = planted
    answer = score(server, ideas, cutoff=PRIOR_ART_CUTOFF)
    assert answer["window"]["start"] == PRIOR_ART_CUTOFF
    lookback = answer["lookback_window"]
    assert (lookback["start"], lookback["end"], lookback["lookback_days"], lookback["clipped"], lookback["status"]) \
        == ("2021-06-01", "2023-05-31", 730, False, "known")
    assert {w["code"] for w in answer["warnings"]} == set()
    got = {i["id"]: i["prior_art"] for i in answer["ideas"]}
    assert [got[idea["id"]]["class_realised"] for idea in ideas.values()] == list(ideas)
    recalled = got["recalled"]
    assert recalled["realised_before"] and recalled["matches"][0]["paper_id"] == "hs-0039"
    first = recalled["matches"][0]
    assert set(first) >= {"paper_id", "title", "venue", "year", "publication_date", "citations", "similarity",
                          "realised", "direction", "period"} and "impact" not in first
    assert first["publication_date"] == "2022-03-28" and first["realised"] and first["period"] is None
    assert got["vague"]["class_direction"] == "unrealised"
    stored = httpx.get(f"{server.url}/v1/runs/{answer['run_id']}/scores", timeout=60).json()["scores"]
    assert {s["id"]: s["prior_art"] for s in stored} == got  # read back as answered
    assert {s["lookback_window"]["start"] for s in stored} == {"2021-06-01"}
    rows = httpx.get(f"{server.url}/v1/runs/{answer['run_id']}/ideas", timeout=60).json()["ideas"]
    assert {r["idea_id"]: r["prior_art_class_realised"] for r in rows} == {
        i["id"]: p["class_realised"] for i, p in zip(answer["ideas"], got.values())}

    unknown = score(server, ideas, cutoff="2020-01-01", run="at-start")  # the index starts that day
    assert {i["prior_art"]["class_realised"] for i in unknown["ideas"]} == {"unknown"}
    assert unknown["lookback_window"]["status"] == "unknown" and unknown["lookback_window"]["start"] is None
    assert [w["code"] for w in unknown["warnings"]] == ["prior_art_unknown"]

    clipped = score(server, ideas, cutoff=PRIOR_ART_CUTOFF, lookback_days=2000, run="clipped")
    assert clipped["lookback_window"]["clipped"] and clipped["lookback_window"]["start"] == "2020-01-01"
    assert clipped["lookback_window"]["requested_start"] == "2017-12-09"
    assert [w["code"] for w in clipped["warnings"]] == ["prior_art_clipped"]

    off = score(server, ideas, cutoff=PRIOR_ART_CUTOFF, prior_art=False, run="off")
    assert off["lookback_window"] is None and all(i["prior_art"] is None for i in off["ideas"])
    bad = httpx.post(f"{server.url}/v1/score", json={"ideas": [ideas["recalled"]], "lookback_days": 0}, timeout=60)
    assert bad.status_code == 422 and "lookback_days" in bad.text

    upload = httpx.post(f"{server.url}/v1/score", files={"files": ("ideas.jsonl", "".join(
        json.dumps(i) + "\n" for i in ideas.values()).encode())}, data={
        "run": "upload", "cutoff": PRIOR_ART_CUTOFF, "matcher": "dense", "lookback_days": "365"}, timeout=300)
    assert upload.status_code == 200, upload.text
    assert upload.json()["lookback_window"]["start"] == "2022-06-01"
    off_upload = httpx.post(f"{server.url}/v1/score", files={"files": ("ideas.jsonl", json.dumps(
        ideas["recalled"]).encode())}, data={"run": "upload-off", "prior_art": "false"}, timeout=300)
    assert off_upload.status_code == 200 and off_upload.json()["lookback_window"] is None

    systems = httpx.get(f"{server.url}/v1/analysis/systems", params={"runs": [answer["run_id"], off["run_id"]],
                                                                     "group_by": "run"}, timeout=60).json()
    groups = {g["group"]: g for g in systems["groups"]}
    block = groups["planted/r"]["prior_art"]
    assert groups["planted/off"]["prior_art"] is None  # scored without prior art: nothing pretended
    assert {c: r["rate"] for c, r in block["rates"]["realised"].items()} == {
        "anticipated": 0.25, "recalled": 0.25, "already_published": 0.25, "unrealised": 0.25}
    assert block["anticipation_score"] > 0 and block["lookback_windows"] == ["2021-06-01..2023-05-31"]
    assert systems["prior_art"]["without_prior_art"] == 4
    csv = httpx.get(f"{server.url}/v1/analysis/systems", params={"runs": answer["run_id"], "format": "csv"},
                    timeout=60).text.splitlines()
    assert "anticipation_score" in csv[0] and "realised.recalled_rate" in csv[0]
    table = run_cli(planted[0], "analyze", "systems", "--run", str(answer["run_id"]), env={"COLUMNS": "80"})
    assert table.returncode == 0, table.stderr
    assert "prior art, realised level" in table.stderr and "anticipation score" in table.stderr
    assert max(len(line) for line in table.stderr.splitlines()) <= 80


def test_cli_score_prints_the_classes_and_the_lookback_window(planted, tmp_path):
    home, ideas = planted
    path = tmp_path / "ideas.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in ideas.values()))
    done = run_cli(home, "score", str(path), "--system", "cli", "--run", "r", "--cutoff", PRIOR_ART_CUTOFF,
                   "--matcher", "dense", "--verifier", "none", "--knowledge-cutoff", "2022-05-01")
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr  # tables and notes go to stderr, JSON to stdout
    assert "look-back 2021-06-01..2023-05-31" in out and "prior art" in out
    assert "prior art (realised): anticipated 1, recalled 1, already_published 1, unrealised 1" in out
    assert "knowledge cutoff 2022-05-01: 1 ideas with realised prior art the generator could have read, 1 with " \
           "realised prior art published after it" in out
    off = run_cli(home, "score", str(path), "--system", "cli", "--run", "off", "--cutoff", PRIOR_ART_CUTOFF,
                  "--matcher", "dense", "--verifier", "none", "--no-prior-art", "--json")
    assert off.returncode == 0, off.stderr
    answer = json.loads(off.stdout)
    assert answer["lookback_window"] is None and answer["ideas"][0]["prior_art"] is None
    early = run_cli(home, "score", str(path), "--system", "cli", "--run", "early", "--cutoff", "2020-01-01",
                    "--matcher", "dense", "--verifier", "none", "--lookback-days", "100")
    assert early.returncode == 0, early.stderr
    assert "warning (prior_art_unknown)" in early.stdout + early.stderr and "unknown 4" in early.stderr
