"""The metrics endpoints and the `hindsight metrics` commands, over the real app and CLI."""

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from indexing.settings import Settings
from service.app import create_app
from service.cli import app as cli_app

GOLD = [{"id": f"p{i}", "a": f"x{i}", "b": f"y{i}", "label": "A"} for i in range(1, 5)]
BEFORE = [{"id": f"p{i}", "prediction": v} for i, v in zip([1, 2, 3, 4], "AAAB")]
AFTER = [{"id": f"p{i}", "prediction": v} for i, v in zip([4, 3, 2, 1], "ABAA")]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    # No lifespan is entered: these endpoints are pure and never touch the state under `home`.
    return TestClient(create_app(Settings(home=tmp_path_factory.mktemp("home"))))


def test_http_audit_four_pairs(client):
    response = client.post("/v1/metrics/novelty/audit",
                           json={"gold": GOLD, "predictions": BEFORE, "predictions_after": AFTER, "n_boot": 200})
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["metrics"]["before.accuracy"] == 0.75 and report["metrics"]["after.accuracy"] == 0.75
    assert report["counts"]["flips"] == 2 and report["counts"]["compared"] == 4
    assert "flip_rate" in report["counting"] and report["details"]["bootstrap"] == {"n_boot": 200, "seed": 0}


def test_http_lists_tasks_and_scores_siqa(client):
    tasks = client.get("/v1/metrics").json()
    assert {"benchmark": "novelty", "task": "audit", "two_runs": True}.items() <= tasks[-1].items()
    response = client.post("/v1/metrics/SIQA/U", json={"gold": [{"id": "q", "answer": "B"}],
                                                       "predictions": [{"id": "q", "prediction": "(B)"}]})
    assert response.status_code == 200 and response.json()["metrics"]["accuracy"] == 1.0


def test_http_unknown_task_is_404(client):
    # gold and predictions hold a record: an empty list is refused by the schema (422) before the task is looked up
    response = client.post("/v1/metrics/innoeval/ranking", json={"gold": [{"id": "q"}], "predictions": [{"id": "q"}]})
    assert response.status_code == 404 and "innoeval/groups" in response.json()["detail"]


@pytest.mark.parametrize("body,loc,text", [
    ({"gold": GOLD[:3] + [dict(GOLD[3], label="tie")], "predictions": BEFORE, "predictions_after": AFTER},
     ["body", "gold", 3, "label"], "tie"),
    ({"gold": GOLD, "predictions": [], "predictions_after": AFTER}, ["body", "predictions"], "at least 1 item"),
    ({"gold": GOLD, "predictions": BEFORE}, ["body", "predictions_after"], "two runs"),
    ({"gold": GOLD, "predictions": [{"id": "zz", "prediction": "A"}], "predictions_after": AFTER},
     ["body", "predictions"], "none of the 1 prediction ids"),
    ({"gold": GOLD, "predictions": [{"prediction": "A"}], "predictions_after": AFTER},
     ["body", "predictions", 0, "id"], "missing id"),
])
def test_http_bad_input_is_422_naming_the_item(client, body, loc, text):
    response = client.post("/v1/metrics/novelty/audit", json=body)
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["loc"] == loc and text in detail["msg"]


def test_http_body_shape_is_validated(client):
    response = client.post("/v1/metrics/novelty/pairwise", json={"gold": GOLD, "predictions": ["A"]})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][:3] == ["body", "predictions", 0]


runner = CliRunner()


def test_cli_audit_json_and_table(tmp_path, write_jsonl):
    gold = write_jsonl(tmp_path / "gold.jsonl", GOLD)
    before = write_jsonl(tmp_path / "before.jsonl", BEFORE)
    after = tmp_path / "after.json"
    after.write_text(json.dumps(AFTER))  # a JSON array works too
    args = ["metrics", "novelty", "--task", "audit", "--gold", str(gold), "--pred", str(before),
            "--pred-after", str(after), "--n-boot", "200"]
    result = runner.invoke(cli_app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["metrics"]["flip_rate"] == 0.5 and report["counts"]["flips"] == 2
    table = runner.invoke(cli_app, args)
    assert table.exit_code == 0 and "flip_rate" in table.stdout and "0.7500" in table.stdout


def test_cli_innoeval_pairs_with_two_gold_files(tmp_path, write_jsonl):
    def pair(a, da, b, db, difficulty):
        return {"group_id": "g", "difficulty": difficulty, "paper_a": {"paper_id": a, "decision": da},
                "paper_b": {"paper_id": b, "decision": db}}
    easy = tmp_path / "easy.json"
    easy.write_text(json.dumps([pair("x", "Accept (Oral)", "y", "Reject", "easy")]))
    hard = tmp_path / "diff.json"
    hard.write_text(json.dumps([pair("u", "Accept (Poster)", "v", "Accept (Spotlight)", "difficult")]))
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"a": "y", "b": "x", "prediction": "B"},
                                                 {"a": "u", "b": "v", "prediction": "A"}])
    result = runner.invoke(cli_app, ["metrics", "innoeval", "--task", "pairs", "--gold", str(easy), "--gold",
                                     str(hard), "--pred", str(pred), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["metrics"] == {"accuracy": 0.5, "accuracy.easy": 1.0, "accuracy.hard": 0.0}


def test_cli_errors_name_file_line_and_field_without_traceback(tmp_path, write_jsonl):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "1", "decision": "accept"},
                                                 {"id": "2", "decision": "unsure"}])
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "1", "decision": "accept"}])
    result = runner.invoke(cli_app, ["metrics", "reviewmt", "--gold", str(gold), "--pred", str(pred)])
    assert result.exit_code == 2
    assert f"{gold} line 2, field 'decision'" in result.output and "Traceback" not in result.output

    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "1", "decision": "accept"}\n\n{"id": 2,\n')
    result = runner.invoke(cli_app, ["metrics", "reviewmt", "--gold", str(gold), "--pred", str(broken)])
    assert result.exit_code == 2 and f"{broken} line 3 column 10: not valid JSON" in result.output

    result = runner.invoke(cli_app, ["metrics", "siqa", "--task", "x", "--gold", str(gold), "--pred", str(pred)])
    assert result.exit_code == 2 and "unknown task 'x' for siqa" in result.output

    result = runner.invoke(cli_app, ["metrics", "novelty", "--task", "audit", "--gold", str(gold), "--pred",
                                     str(pred)])
    assert result.exit_code == 2 and "--pred-after" in result.output

    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    result = runner.invoke(cli_app, ["metrics", "reviewmt", "--gold", str(gold), "--pred", str(empty)])
    assert result.exit_code == 2 and "empty file" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# ------------------------------------------------------------------------------------------------ --compat


def test_cli_compat_reference_puts_the_reference_first(tmp_path, write_jsonl):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"id": i, "label": "novel"}) + "\n" for i in (1, 2)))
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"id": 1, "prediction": 1}) + "\n")
    runner = CliRunner()
    base = ["metrics", "novelty", "--task", "pointwise", "--gold", str(gold), "--pred", str(pred)]
    strict, reference = runner.invoke(cli_app, base), runner.invoke(cli_app, [*base, "--compat", "reference"])
    assert strict.exit_code == reference.exit_code == 0
    assert strict.stdout.index("strict") < strict.stdout.index("reference:")
    assert reference.stdout.index("reference:") < reference.stdout.index("strict")
    report = json.loads(runner.invoke(cli_app, [*base, "--compat", "reference", "--json"]).stdout)
    assert report["compat"] == "reference" and report["metrics"]["accuracy"] == 1.0
    assert report["strict"]["metrics"]["accuracy"] == 0.5 and report["n"] == 1 and report["strict"]["n"] == 2
