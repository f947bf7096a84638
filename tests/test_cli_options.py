"""Errors on the command line name its options (issue 42: `judge run --run L` answered with a query-string hint,
`add ?system=...`); over HTTP the same faults name the query parameters."""

import json

from fastapi.testclient import TestClient

from service.app import create_app
from tests.factories import labels_store


def test_cli_errors_name_options_and_http_errors_name_parameters(settings, run_cli_here, tmp_path):
    labels_store(settings.home, per_system=4)  # two systems' runs labelled r1
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"a": "sys-a-000", "b": "sys-a-001"}) + "\n")
    res = run_cli_here("judge", "pairs", "--run", "r1", "--pairs", str(pairs), "--backend", "openai")
    assert res.exit_code == 2
    assert "--run: run label 'r1' is used by systems sys-a, sys-b; add --system SYSTEM" in res.output
    assert "?system" not in res.output
    for args, option in ((("analyze", "systems", "--run", "nope"), "--run: no run 'nope'"),
                         # not numbers to SQLite: '²' is a digit to isdigit(), 2**64 overflows its integers
                         (("analyze", "systems", "--run", "²"), "--run: no run '²'"),
                         (("analyze", "systems", "--run", str(2**64)), f"--run: no run '{2**64}'"),
                         (("analyze", "systems", "--by", "colour"), "--by: expected one of"),
                         (("analyze", "systems", "--labels", "--predictor", "dice"), "--predictor: expected one of"),
                         (("analyze", "quadrants"), "--judge: ")):
        res = run_cli_here(*args)
        assert res.exit_code == 2 and option in res.output, (args, res.output)
    res = run_cli_here("label", "draw", "--run", "nope", "--n", "1")
    assert res.exit_code == 2 and "--run: no run 'nope'" in res.output
    with TestClient(create_app(settings)) as c:
        r = c.post("/v1/labels/draws", json={"run": "nope", "n": 1}, headers={"Authorization": "Bearer test-token"})
        assert r.status_code == 404 and r.json()["detail"].startswith("run: no run 'nope'")
        r = c.get("/v1/runs/r1/scores")
        assert r.status_code == 404 and "add ?system=..." in r.json()["detail"] and "--system" not in r.text


def test_the_http_judge_audit_takes_a_run_label_two_systems_share(settings):
    from indexing.db import session_scope
    from service.judge_scores import import_judge_scores

    labels_store(settings.home, per_system=4)
    rows = ["idea_id,system,run,judge,novelty,overall"]
    rows += [f"{s}-{i:03d},{s},r1,{j},{5 + i},{6 + (j == 'b')}" for s in ("sys-a", "sys-b") for i in range(4)
             for j in ("a", "b")]
    with session_scope(settings.db_path) as s:
        import_judge_scores(s, ("\n".join(rows) + "\n").encode(), name="scores.csv", fmt="csv")
    with TestClient(create_app(settings)) as c:
        both = c.get("/v1/llm-judge/audit", params=[("judge", "a"), ("judge", "b"), ("run", "r1")])
        assert both.status_code == 200 and both.json()["ideas"] == 8, both.text
        one = c.get("/v1/llm-judge/audit", params=[("judge", "a"), ("judge", "b"), ("run", "1")])
        assert one.json()["ideas"] == 4


def test_a_run_id_names_that_run_everywhere_though_another_runs_label_has_its_digits(settings, run_cli_here):
    """The dashboard names runs by id (its labelling view posts run=<id>): a run whose label is another run's id must
    not take that id's place, in the labels endpoints as in the run endpoints and the CLI."""
    from indexing.db import session_scope
    from indexing.models import Run

    labels_store(settings.home, per_system=4)  # run 1 (sys-a) and run 2 (sys-b), both labelled r1
    with session_scope(settings.db_path) as s:
        s.get(Run, 2).label = "1"
        s.commit()
    with TestClient(create_app(settings)) as c:
        assert c.get("/v1/runs/1/scores").json()["system"] == "sys-a"
        status = c.get("/v1/labels/status", params={"run": "1"}).json()
        assert [st["run_id"] for st in status["strata"]] == [1]
        made = c.post("/v1/labels", headers={"Authorization": "Bearer test-token"}, json={
            "run": "1", "idea_id": "sys-a-000", "paper_id": "sys-a-000-c1", "label": "none", "annotator": "me"})
        assert made.status_code == 200, made.text
    res = run_cli_here("label", "status", "--run", "1", "--json")
    assert [st["run_id"] for st in json.loads(res.stdout)["strata"]] == [1]
