"""Generator files scored end to end: the CLI (`hindsight score FILE|DIR --format ...`) and a multipart upload to the
real server, each idea counted, its origin stored and shown, AI-Scientist's own ratings in a quadrant analysis."""

import csv
import io
import json
import sqlite3
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.helpers import ROOT, SHARED_DATA, Server
from tests.helpers import run_cli as hs

GENERATORS = SHARED_DATA / "generators"
REPOSITORY = GENERATORS / "ai-researcher"
PLANS = REPOSITORY / "experiment_plans"
SCIENTIST = GENERATORS / "ai-scientist"
shared = pytest.mark.skipif(not PLANS.is_dir() or not SCIENTIST.is_dir(),
                            reason="the shared generator files (../shared/data/generators) are not here")
TOKEN = {"Authorization": "Bearer test-token"}
pytestmark = pytest.mark.server  # CLI subprocesses and a real server

# an ideas.json as AI-Scientist writes it, on topics the sample corpus holds
SCIENTIST_IDEAS = [
    {"Name": "sparse_experts", "Title": "Sparse Mixture of Experts for Long Context",
     "Experiment": "Route tokens to sparse experts by position so long documents fit the context window.",
     "Interestingness": 8, "Feasibility": 6, "Novelty": 7, "novel": True},
    {"Name": "retrieval_uncertainty", "Title": "Uncertainty-Triggered Retrieval",
     "Experiment": "Retrieve evidence whenever the generator's token probabilities fall below a threshold.",
     "Interestingness": 7, "Feasibility": 8, "Novelty": 5, "novel": False},
    {"Name": "coffee", "Title": "Coffee Breaks", "Experiment": "Measure how coffee breaks change lab morale.",
     "Interestingness": 3, "Feasibility": 9, "Novelty": 2, "novel": True},
    {"Name": "chain_check", "Title": "Self-Verification of Reasoning Chains",
     "Experiment": "Have the model check each step of its chain of thought against the question before answering.",
     "Interestingness": 9, "Feasibility": 7, "Novelty": 8},
]
PLAN = {"topic_description": "factuality", "idea_name": "Self-Check",
        "full_experiment_plan": {"Title": "Self-Check Prompting", "Problem Statement": "Language models hallucinate "
                                 "facts in long answers.", "Proposed Method": "Ask the model to list its claims and "
                                 "verify each against retrieved evidence.", "Step-by-Step Experiment Plan": {
                                     "Step 1": "Collect questions.", "Step 2": ["Run baseline", "Run ours"]}}}


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("generators") / "home"
    assert hs(home, "ingest", str(ROOT / "data" / "papers.jsonl")).returncode == 0
    out = hs(home, "index", "build", "--json")
    assert out.returncode == 0, out.stderr
    return home


def db_rows(home: Path, sql: str, *args) -> list[tuple]:
    with sqlite3.connect(home / "hindsight.db") as con:
        return con.execute(sql, args).fetchall()


def test_cli_scores_an_ai_scientist_file_and_its_ratings_make_quadrants(home: Path, tmp_path: Path):
    ideas = tmp_path / "mytemplate" / "ideas.json"
    ideas.parent.mkdir()
    ideas.write_text(json.dumps(SCIENTIST_IDEAS, indent=4))
    out = hs(home, "score", str(ideas), "--system", "ai-scientist", "--run", "t1", "--knowledge-cutoff", "2024-01-01",
             "--json")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["read"]["read"] == 4 == answer["read"]["scored"] and answer["read"]["refused"] == 0
    assert answer["read"]["formats"] == ["ai-scientist"] and answer["read"]["mappings"]["ai-scientist"]["method"] == \
        ["Experiment"]
    # --knowledge-cutoff declared the system, and its runs default to that cutoff
    assert answer["cutoff_source"] == "system" and answer["cutoff"] == "2024-01-01"
    assert json.loads(hs(home, "system", "list", "--json").stdout)[0]["knowledge_cutoff"] == "2024-01-01"
    assert answer["judge_scores"]["inserted"] == 4 and answer["judge_scores"]["judges"] == ["ai-scientist-self"]
    first = answer["ideas"][0]
    assert first["id"] == "mytemplate/sparse_experts"
    assert first["origin"] == {"file": str(ideas), "generator": "ai-scientist", "topic": "mytemplate",
                               "title": "Sparse Mixture of Experts for Long Context"}
    assert db_rows(home, "SELECT generator, topic, title FROM ideas WHERE idea_id = ?", first["id"]) == \
        [("ai-scientist", "mytemplate", "Sparse Mixture of Experts for Long Context")]
    # the generator's beliefs against the future, right after the one import
    out = hs(home, "analyze", "quadrants", "--run", "t1", "--judge", "ai-scientist-self", "--dimension", "novelty",
             "--json")
    assert out.returncode == 0, out.stderr
    counts = {c["group"]: c for c in json.loads(out.stdout)["counts"]}
    assert counts["ai-scientist"]["judged"] == 4
    out = hs(home, "analyze", "quadrants", "--run", "t1", "--judge", "ai-scientist-self", "--dimension", "novel",
             "--judge-cut", "0.5", "--json")
    assert out.returncode == 0, out.stderr
    assert {c["group"]: c for c in json.loads(out.stdout)["counts"]}["ai-scientist"]["judged"] == 3  # one unchecked
    # scoring again updates nothing it already holds
    again = json.loads(hs(home, "score", str(ideas), "--system", "ai-scientist", "--run", "t1", "--json").stdout)
    assert again["judge_scores"]["unchanged"] == 4


def test_cli_refuses_a_directory_with_a_bad_record_unless_asked_to_skip(home: Path, tmp_path: Path):
    plans = tmp_path / "plans" / "factuality"
    plans.mkdir(parents=True)
    (plans / "self_check.json").write_text(json.dumps(PLAN))
    (plans / "no_method.json").write_text(json.dumps({**PLAN, "full_experiment_plan": {"Title": "T",
                                                                                      "Problem Statement": "P"}}))
    runs = db_rows(home, "SELECT count(*) FROM runs")
    out = hs(home, "score", str(tmp_path / "plans"), "--run", "strict")
    assert out.returncode == 2
    assert "1 of 2 ideas refused, nothing scored" in out.stderr
    assert "no_method.json: record no_method: field 'full_experiment_plan.Proposed Method'" in out.stderr
    assert db_rows(home, "SELECT count(*) FROM runs") == runs  # nothing written
    out = hs(home, "score", str(tmp_path / "plans"), "--run", "skip", "--skip-invalid", "--json")
    assert out.returncode == 0, out.stderr
    read = json.loads(out.stdout)["read"]
    assert (read["read"], read["scored"], read["refused"]) == (2, 1, 1)
    assert read["refusals"][0]["field"] == "full_experiment_plan.Proposed Method"
    (tmp_path / "lit.json").write_text('{"topic_description": "x", "paper_bank": []}')
    out = hs(home, "score", str(tmp_path / "lit.json"))
    assert out.returncode == 2 and "lit.json: field 'paper_bank': AI-Researcher's literature review" in out.stderr
    out = hs(home, "score", str(tmp_path / "plans"), "--format", "ai-scientist")
    assert out.returncode == 2 and "field 'Experiment'" in out.stderr


@shared
def test_cli_scores_every_shared_ai_scientist_template(home: Path):
    out = hs(home, "score", str(SCIENTIST), "--system", "ai-scientist-all", "--run", "templates", "--json")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert (answer["read"]["read"], answer["read"]["scored"], answer["read"]["refused"]) == (162, 162, 0)
    assert answer["judge_scores"]["ideas"] == 162
    assert {i["origin"]["topic"] for i in answer["ideas"]} == {"2d_diffusion", "grokking", "nanoGPT", "MACE",
                                                               "earthquake-prediction", "mobilenetV3"}
    out = hs(home, "analyze", "quadrants", "--run", "templates", "--judge", "ai-scientist-self", "--dimension",
             "interestingness", "--json")
    assert out.returncode == 0, out.stderr
    assert {c["group"]: c for c in json.loads(out.stdout)["counts"]}["all"]["judged"] == 162


@pytest.fixture(scope="module")
def server(home: Path):
    srv = Server(home)
    yield srv.url
    srv.stop()


def upload(url: str, files: list[tuple[str, bytes]], headers=None, **form) -> httpx.Response:
    return httpx.post(f"{url}/v1/score", files=[("files", f) for f in files], data=form, headers=headers,
                      timeout=600)


def test_upload_reads_files_as_one_run_with_origins(server: str):
    plan = json.dumps(PLAN).encode()
    r = upload(server, [("factuality/self_check.json", b"\xef\xbb\xbf" + plan.replace(b",", b",\r\n")),
                        ("mytemplate/ideas.json", json.dumps(SCIENTIST_IDEAS).encode())],
               system="mixed", run="u1")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["read"]["read"] == 5 == body["read"]["scored"] and body["read"]["formats"] == ["ai-researcher",
                                                                                             "ai-scientist"]
    assert body["matcher"] and body["index_version"] and body["window"]
    assert body["ideas"][0]["origin"] == {"file": "factuality/self_check.json", "generator": "ai-researcher",
                                          "topic": "factuality", "title": "Self-Check Prompting"}
    assert body["judge_scores"]["ideas"] == 4
    rows = httpx.get(f"{server}/v1/runs/{body['run_id']}/ideas").json()["ideas"]
    assert [(r["idea_id"], r["generator"], r["topic"]) for r in rows][:2] == [
        ("factuality/self_check", "ai-researcher", "factuality"), ("mytemplate/sparse_experts", "ai-scientist",
                                                                   "mytemplate")]
    assert all(r["matcher"] == body["matcher"] and r["best_title"] for r in rows)
    csv_text = httpx.get(f"{server}/v1/runs/{body['run_id']}/ideas", params={"format": "csv"}).text
    assert csv_text.splitlines()[0].startswith("idea_pk,idea_id,run_id,system,run,generator,topic,title,file")
    by_id = {row["idea_id"]: row for row in csv.DictReader(io.StringIO(csv_text))}  # not by substring: run ids vary
    assert (by_id["factuality/self_check"]["topic"], by_id["factuality/self_check"]["title"]) == (
        "factuality", "Self-Check Prompting")
    scores = httpx.get(f"{server}/v1/runs/{body['run_id']}/scores").json()["scores"]
    assert scores[0]["origin"]["title"] == "Self-Check Prompting"
    detail = httpx.get(f"{server}/v1/analysis/ideas/{rows[0]['idea_pk']}").json()
    assert detail["origin"]["topic"] == "factuality"


def test_upload_refusals_and_the_admin_rule(server: str):
    r = upload(server, [("lit_review/bias.json", b'{"topic_description": "x", "paper_bank": []}')])
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert detail["errors"][0]["file"] == "lit_review/bias.json" and detail["errors"][0]["field"] == "paper_bank"
    bad = json.dumps([*SCIENTIST_IDEAS, {"Name": "x", "Title": "T"}]).encode()
    r = upload(server, [("t/ideas.json", bad)], run="strict")
    assert r.status_code == 422 and r.json()["detail"]["refused"] == 1
    assert r.json()["detail"]["errors"][0]["text"] == "t/ideas.json: record [4] x: field 'Experiment': missing or empty"
    r = upload(server, [("t/ideas.json", bad)], run="skip", skip_invalid="true")
    assert r.status_code == 200 and (r.json()["read"]["scored"], r.json()["read"]["refused"]) == (4, 1)
    # declaring a knowledge cutoff is what PUT /v1/systems does: it needs the admin token
    r = upload(server, [("t/ideas.json", json.dumps(SCIENTIST_IDEAS).encode())], system="declared",
               knowledge_cutoff="2024-02-01")
    assert r.status_code == 401
    r = upload(server, [("t/ideas.json", json.dumps(SCIENTIST_IDEAS).encode())], headers=TOKEN, system="declared",
               knowledge_cutoff="2024-02-01")
    assert r.status_code == 200 and r.json()["cutoff"] == "2024-02-01" and r.json()["cutoff_source"] == "system"
    r = upload(server, [("t/ideas.json", b"[]")], format="bogus")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "format"]
    # the JSON body is answered as before, and an origin sent with an idea is kept
    r = httpx.post(f"{server}/v1/score", json={"run": "json", "ideas": [
        {"id": "j1", "text": "Sparse experts for long documents.", "origin": {"generator": "mine", "topic": "lm"}}]},
                   timeout=120)
    assert r.status_code == 200 and r.json()["ideas"][0]["origin"]["topic"] == "lm" and r.json()["read"] is None


def test_the_cli_and_an_upload_store_the_same_run_for_the_same_files(home: Path, server: str, tmp_path: Path):
    plans = tmp_path / "plans"
    (plans / "factuality").mkdir(parents=True)
    (plans / "mytemplate").mkdir()
    files = {"factuality/self_check.json": json.dumps(PLAN), "mytemplate/ideas.json": json.dumps(SCIENTIST_IDEAS)}
    for name, text in files.items():
        (plans / name).write_text(text)
    out = hs(home, "score", str(plans), "--system", "one-flow", "--run", "cli", "--knowledge-cutoff", "2024-01-01",
             "--json")
    assert out.returncode == 0, out.stderr
    cli = json.loads(out.stdout)
    r = upload(server, [(name, text.encode()) for name, text in files.items()], headers=TOKEN, system="one-flow",
               run="http", knowledge_cutoff="2024-01-01")
    assert r.status_code == 200, r.text
    http = r.json()
    same = ("read", "judge_scores", "cutoff", "cutoff_source", "window", "matcher", "thresholds", "index_version")
    assert {k: cli[k] for k in same} == {k: http[k] for k in same}
    assert cli["judge_scores"]["ideas"] == 4

    def stored(run_id: int) -> tuple[list, list]:
        scores = httpx.get(f"{server}/v1/runs/{run_id}/scores").json()["scores"]
        for s in scores:  # the CLI names a file by its path, an upload by the name it was sent with
            assert Path(s["origin"].pop("file")).parent.name == s["id"].split("/")[0]
            s.pop("scored_at")
        rows = httpx.get(f"{server}/v1/runs/{run_id}/ideas").json()["ideas"]
        judges = [httpx.get(f"{server}/v1/analysis/ideas/{row['idea_pk']}").json()["judges"] for row in rows]
        return scores, [({k: v for k, v in row.items() if k not in ("idea_pk", "run_id", "run", "file")}, j)
                        for row, j in zip(rows, judges)]

    by_cli, by_http = stored(cli["run_id"]), stored(http["run_id"])
    assert len(by_cli[0]) == 5 and by_cli == by_http


def test_a_refused_window_keeps_the_knowledge_cutoff_undeclared(home: Path, server: str, tmp_path: Path):
    ideas = tmp_path / "t" / "ideas.json"
    ideas.parent.mkdir()
    ideas.write_text(json.dumps(SCIENTIST_IDEAS))
    r = upload(server, [("t/ideas.json", ideas.read_bytes())], headers=TOKEN, system="refused-http",
               knowledge_cutoff="2024-01-01", cutoff="1990-01-01")
    assert r.status_code == 409 and r.json()["detail"]["field"] == "cutoff"
    out = hs(home, "score", str(ideas), "--system", "refused-cli", "--knowledge-cutoff", "2024-01-01", "--cutoff",
             "1990-01-01")
    assert out.returncode == 2 and "--cutoff" in out.stderr
    assert db_rows(home, "SELECT name FROM systems WHERE name LIKE 'refused-%'") == []  # nothing written


@shared
def test_upload_of_the_shared_ai_researcher_directory_as_a_zip(server: str):
    """The repository's folder as a user zips it: its lit_review/ beside experiment_plans/ is the generator's
    literature, skipped with a note, not a file that fits no layout."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(REPOSITORY.rglob("*")):
            if path.is_file():
                archive.write(path, f"ai-researcher/{path.relative_to(REPOSITORY)}")
    r = upload(server, [("ai-researcher.zip", buf.getvalue())], system="ai-researcher", run="claude-2024-05")
    assert r.status_code == 200, r.text[:2000]
    body = r.json()
    assert (body["read"]["read"], body["read"]["scored"], body["read"]["refused"]) == (213, 213, 0)
    assert len(body["read"]["literature_files"]) == 8
    assert body["read"]["notes"] == ["ai-researcher.zip/ai-researcher/lit_review/: 8 file(s) of AI-Researcher's "
                                     "literature review (the papers it retrieved before generating, not ideas): "
                                     "skipped"]
    assert body["read"]["mappings"]["ai-researcher"]["name"] == "proposal+plan"
    topics = {i["origin"]["topic"] for i in body["ideas"]}
    assert len(topics) == 6 and all(i["id"].split("/")[0] in topics for i in body["ideas"])
    assert body["ideas"][0]["origin"]["file"].startswith("ai-researcher.zip/ai-researcher/experiment_plans/")


@shared
def test_cli_scores_the_ai_researcher_repository_folder(home: Path):
    """`score DIR` on the repository as a user has it: lit_review/ is skipped with one line, the 213 ideas of
    experiment_plans/ are scored (issue 42: it failed on lit_review/bias_prompting_method.json, 'fits no layout')."""
    out = hs(home, "score", str(REPOSITORY), "--system", "ai-researcher-cli", "--run", "repo", "--verifier", "none")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "213 scored, 0 refused" in out.stderr
    lines = [x for x in out.stderr.splitlines() if "lit_review" in x]
    assert len(lines) == 1 and "literature review" in lines[0] and "skipped" in lines[0]
    assert db_rows(home, "SELECT count(*) FROM ideas JOIN runs ON runs.id = ideas.run_id WHERE runs.system = ?",
                   "ai-researcher-cli") == [(213,)]
