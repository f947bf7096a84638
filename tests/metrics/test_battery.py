"""Malformed inputs across the four benchmarks: each ends in exit 2 naming file, line and field, or in a count.

Never a traceback. Most cases run the CLI in process; a share runs `python -m service.cli` as a subprocess, and a
few go through the HTTP endpoint of the real server.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from service.cli import app as cli_app
from service.metrics import TASKS, MetricsInputError, run_task

ROOT = Path(__file__).resolve().parents[2]
BOM = "\ufeff"


def jsonl(*rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


POINT_GOLD = jsonl({"paper_id": "p1", "decision": "Accept (Oral)"}, {"paper_id": "p2", "decision": "Reject"})
GROUP = {"query": {"paper_id": "q", "decision": "Accept (Oral)"}, "query_category": "oral",
         "matches": {"spotlight": {"paper_internal_id": "s", "category": "spotlight"},
                     "poster": {"paper_internal_id": "p", "category": "poster"},
                     "reject": {"paper_internal_id": "r", "category": "reject"}}}
PAIR = {"group_id": "g", "difficulty": "easy", "paper_a": {"paper_id": "1", "decision": "Reject"},
        "paper_b": {"paper_id": "2", "decision": "Accept (Oral)"}}
SIQA_GOLD = jsonl({"id": "q1", "answer": "A", "type": "what", "choices": ["x", "y"]},
                  {"id": "q2", "answer": "C", "type": "how", "choices": ["x", "y", "z", "w"]})
REVIEW_GOLD = jsonl({"id": "r1", "decision": "accept", "scores": [6, 8]}, {"id": "r2", "decision": "reject",
                                                                          "scores": [3]})
NOVEL_GOLD = jsonl({"id": "n1", "a": "x", "b": "y", "label": "A"}, {"id": "n2", "a": 10, "b": 11, "label": "B"})
POINTWISE_GOLD = jsonl({"id": 1, "label": "novel"}, {"id": 2, "label": "not novel"})


@dataclass
class Case:
    name: str
    args: list[str]
    gold: str | bytes | None
    pred: str | bytes | None
    error: list[str] = field(default_factory=list)  # substrings of the exit-2 message ({gold}/{pred} expanded)
    counts: dict[str, int] = field(default_factory=dict)  # dotted paths into the JSON report
    pred_after: str | None = None
    suffix: str = ".jsonl"  # of the predictions file; only ".csv" changes how a file is read
    gold_suffix: str = ".jsonl"
    subprocess: bool = False


CASES = [
    # InnoEval points
    Case("points-broken-json", ["innoeval", "--task", "points"], POINT_GOLD,
         '{"id": "p1", "prediction": "oral"}\n{"id": "p2", "prediction": \n',
         ["{pred} line 2 column", "not valid JSON"], subprocess=True),
    Case("points-null-gold-decision", ["innoeval", "--task", "points"],
         jsonl({"paper_id": "p1", "decision": None}), jsonl({"id": "p1", "prediction": "oral"}),
         ["{gold} line 1, field 'decision'", "missing required field"]),
    Case("points-number-as-gold-decision", ["innoeval", "--task", "points"],
         jsonl({"paper_id": "p1", "decision": 3}), jsonl({"id": "p1", "prediction": "oral"}),
         ["{gold} line 1, field 'decision'", "cannot read a decision"]),
    Case("points-integer-prediction", ["innoeval", "--task", "points"], POINT_GOLD,
         jsonl({"id": "p1", "prediction": 1}, {"id": "p2", "prediction": "Reject"}),
         counts={"counts.invalid": 1, "reference.counts.dropped_unreadable_prediction": 1}),
    Case("points-id-not-in-gold", ["innoeval", "--task", "points"], POINT_GOLD,
         jsonl({"id": "p1", "prediction": "oral"}, {"id": "zz", "prediction": "oral"}),
         counts={"counts.unknown_id": 1, "counts.missing": 1, "reference.counts.dropped_missing": 1}),
    Case("points-no-id-matches", ["innoeval", "--task", "points"], POINT_GOLD,
         jsonl({"id": "x1", "prediction": "oral"}), ["{pred}", "none of the 1 prediction ids matches"]),
    Case("points-duplicate-conflicting", ["innoeval", "--task", "points"], POINT_GOLD,
         jsonl({"id": "p1", "prediction": "oral"}, {"id": "p1", "prediction": "poster"}),
         counts={"counts.duplicate_conflicting": 1, "reference.n": 1}),
    Case("points-bom-crlf", ["innoeval", "--task", "points"], BOM + POINT_GOLD.replace("\n", "\r\n"),
         BOM + jsonl({"id": "p1", "prediction": "oral"}, {"id": "p2", "prediction": "Reject"}),
         counts={"strict.n": 2, "counts.missing": 0, "counts.invalid": 0}),
    Case("points-empty-predictions", ["innoeval", "--task", "points"], POINT_GOLD, "\n\n",
         ["{pred}", "no records (empty file)"], subprocess=True),
    Case("points-array-item-not-object", ["innoeval", "--task", "points"], POINT_GOLD,
         json.dumps([{"id": "p1", "prediction": "oral"}, "p2"]),
         ["{pred} item 2 (line 1, column", "expected a JSON object"], suffix=".json", subprocess=True),
    # InnoEval groups
    Case("groups-matches-a-list", ["innoeval", "--task", "groups"], json.dumps([dict(GROUP, matches=[1, 2])]),
         jsonl({"id": "q", "ranking": ["q", "s", "p", "r"]}), ["item 1 (line 1, column 2), field 'matches'"],
         suffix=".json"),
    Case("groups-ranking-a-string", ["innoeval", "--task", "groups"], json.dumps([GROUP]),
         jsonl({"id": "q", "best": "q", "ranking": "q, s, p, r"}),
         counts={"counts.invalid_ranking": 1, "reference.counts.filled_ranking": 1}, suffix=".json"),
    Case("groups-best-not-a-member", ["innoeval", "--task", "groups"], json.dumps([GROUP]),
         jsonl({"id": "q", "best": "zz", "ranking": ["q", "s", "p", "r"]}), counts={"counts.invalid_best": 1},
         suffix=".json"),
    # InnoEval pairs
    Case("pairs-gold-without-paper-a", ["innoeval", "--task", "pairs"],
         json.dumps([{k: v for k, v in PAIR.items() if k != "paper_a"}]), jsonl({"a": "1", "b": "2",
                                                                               "prediction": "B"}),
         ["{gold} item 1 (line 1, column 2), field 'paper_a'"], suffix=".json"),
    Case("pairs-a-equals-b", ["innoeval", "--task", "pairs"], json.dumps([PAIR]),
         jsonl({"a": "1", "b": "1", "prediction": "A"}), ["{pred} line 1", "same paper"], suffix=".json"),
    Case("pairs-integer-paper-ids", ["innoeval", "--task", "pairs"], json.dumps([PAIR]),
         jsonl({"a": 1, "b": 2, "prediction": 2}), counts={"counts.invalid": 0, "strict.n": 1},
         suffix=".json"),
    # SIQA
    Case("siqa-u-gold-answer-e", ["siqa", "--task", "u"], jsonl({"id": "q1", "answer": "E", "type": "what"}),
         jsonl({"id": "q1", "prediction": "A"}), ["{gold} line 1, field 'answer'", "one of A-D"]),
    Case("siqa-u-gold-outside-its-choices", ["siqa", "--task", "u"],
         jsonl({"id": "q1", "answer": "C", "type": "what", "choices": ["x", "y"]}),
         jsonl({"id": "q1", "prediction": "A"}), ["{gold} line 1, field 'answer'", "own choices"]),
    Case("siqa-u-out-of-range-choice", ["siqa", "--task", "u"], SIQA_GOLD,
         jsonl({"id": "q1", "prediction": "D"}, {"id": "q2", "prediction": "C"}),
         counts={"counts.out_of_range": 1, "counts.invalid": 1}),
    Case("siqa-u-repeated-gold-id", ["siqa", "--task", "u"], SIQA_GOLD + SIQA_GOLD.splitlines()[0] + "\n",
         jsonl({"id": "q1", "prediction": "A"}), ["{gold} line 3, field 'id'", "repeated"]),
    Case("siqa-u-unknown-type", ["siqa", "--task", "u"], jsonl({"id": "q1", "answer": "A", "type": "why"}),
         jsonl({"id": "q1", "prediction": "A"}), ["{gold} line 1, field 'type'", "unknown question type"]),
    Case("siqa-u-csv-with-bom", ["siqa", "--task", "u"], BOM + "id,answer,type\r\nq1,A,what\r\nq2,B,how\r\n",
         BOM + "id,prediction\r\nq1,A\r\nq2,(B)\r\n", suffix=".csv", gold_suffix=".csv",
         counts={"strict.n": 2, "reference.counts.lenient_only_right": 1}),
    Case("siqa-s-string-for-gold-number", ["siqa", "--task", "s"], jsonl({"id": "s1", "perception": "3.5"}),
         jsonl({"id": "s1", "perception": [0, 0, 0, 0, 1]}), ["{gold} line 1, field 'perception'",
                                                               "finite number"]),
    Case("siqa-s-strings-for-logits", ["siqa", "--task", "s"],
         jsonl({"id": "s1", "perception": 2}, {"id": "s2", "perception": 4}, {"id": "s3", "perception": 5}),
         jsonl({"id": "s1", "perception": ["1", "2", "3", "4", "5"]}, {"id": "s2", "perception": [0, 0, 0, 1, 0]},
               {"id": "s3", "perception": None}),
         counts={"counts.invalid": 2, "counts.perception.n_scored": 1}),
    # ReviewMT
    Case("reviewmt-scores-as-strings", ["reviewmt"], jsonl({"id": "r1", "decision": "accept",
                                                            "scores": ["6", "8"]}),
         jsonl({"id": "r1", "decision": "accept"}), ["{gold} line 1, field 'scores[0]'", "must be a number"],
         subprocess=True),
    Case("reviewmt-score-null", ["reviewmt"], jsonl({"id": "r1", "decision": "accept", "scores": [6, None]}),
         jsonl({"id": "r1", "decision": "accept"}), ["{gold} line 1, field 'scores[1]'"]),
    Case("reviewmt-rating-string", ["reviewmt"], jsonl({"id": "r1", "decision": "accept", "rating": "6"}),
         jsonl({"id": "r1", "decision": "accept"}), ["{gold} line 1, field 'rating'"]),
    Case("reviewmt-scores-not-a-list", ["reviewmt"], jsonl({"id": "r1", "decision": "accept", "scores": "6, 8"}),
         jsonl({"id": "r1", "decision": "accept"}), ["{gold} line 1, field 'scores'", "list of numbers"]),
    Case("reviewmt-reviews-as-a-string", ["reviewmt"], REVIEW_GOLD,
         jsonl({"id": "r1", "reviews": "Score: 6", "decision": "accept"},
               {"id": "r2", "reviews": ["Score: 3"], "decision": "reject"}),
         counts={"counts.invalid_reviews": 1, "counts.papers_without_reviews": 1}),
    Case("reviewmt-decision-an-integer", ["reviewmt"], REVIEW_GOLD,
         jsonl({"id": "r1", "reviews": [], "decision": 1}, {"id": "r2", "decision": "reject"}),
         counts={"counts.invalid": 1, "reference.counts.missed_decisions": 1}),
    # novelty
    Case("novelty-gold-tie", ["novelty", "--task", "pairwise"], jsonl({"id": "n1", "a": "x", "b": "y",
                                                                       "label": "tie"}),
         jsonl({"id": "n1", "prediction": "A"}), ["{gold} line 1, field 'label'", "tie"]),
    Case("novelty-pointwise-integers", ["novelty", "--task", "pointwise"], POINTWISE_GOLD,
         jsonl({"id": 1, "prediction": 1}, {"id": 2, "prediction": 0}),
         counts={"counts.invalid": 0, "reference.n": 2}),
    Case("novelty-pairwise-integer-ids", ["novelty", "--task", "pairwise"], NOVEL_GOLD,
         jsonl({"id": "n1", "prediction": 0}, {"id": "n2", "a": 11, "b": 10, "prediction": 11}),
         counts={"counts.invalid": 0}),
    Case("novelty-audit-without-second-run", ["novelty", "--task", "audit"], NOVEL_GOLD,
         jsonl({"id": "n1", "prediction": "A"}), ["--pred-after"]),
    Case("novelty-audit-broken-second-run", ["novelty", "--task", "audit"], NOVEL_GOLD,
         jsonl({"id": "n1", "prediction": "A"}), ["{pred_after} line 1 column", "not valid JSON"],
         pred_after='{"id": "n1", "prediction": A}\n', subprocess=True),
    Case("novelty-gold-without-id", ["novelty", "--task", "pairwise"], jsonl({"a": "x", "b": "y", "label": "A"}),
         jsonl({"id": "n1", "prediction": "A"}), ["{gold} line 1, field 'id'", "missing id"]),
    Case("novelty-float-id", ["novelty", "--task", "pairwise"], NOVEL_GOLD, jsonl({"id": 1.5, "prediction": "A"}),
         ["{pred} line 1, field 'id'", "string or an integer"]),
    Case("pretty-printed-object-not-records", ["novelty", "--task", "pairwise"], NOVEL_GOLD,
         json.dumps({"id": "n1", "prediction": "A"}, indent=2), ["{pred} line 1 column", "not valid JSON"]),
    Case("not-utf8", ["novelty", "--task", "pairwise"], NOVEL_GOLD, "é".encode("latin-1") + b"\n",
         ["{pred}: cannot read"], subprocess=True),
    Case("file-does-not-exist", ["novelty", "--task", "pairwise"], NOVEL_GOLD, None, ["{pred}: cannot read"]),
    Case("markup-like-text-in-an-error", ["innoeval", "--task", "points"],
         jsonl({"paper_id": "p1", "decision": "[/] [bold]maybe"}), jsonl({"id": "p1", "prediction": "oral"}),
         ["{gold} line 1, field 'decision'", "[/] [bold]maybe"]),
    Case("array-file-of-unrelated-ids", ["novelty", "--task", "pairwise"], NOVEL_GOLD,
         json.dumps([{"id": "q9", "prediction": "A"}]), ["{pred}: none of the 1 prediction ids"], suffix=".json"),
    Case("csv-more-cells-than-header", ["siqa", "--task", "u"], SIQA_GOLD, "id,prediction\nq1,A,extra\n",
         ["{pred} line 2", "more cells than the header"], suffix=".csv"),
]


def write(path: Path, content: str | bytes | None) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_bytes(content.encode("utf-8"))
    return path


def arguments(case: Case, tmp_path: Path) -> tuple[list[str], dict[str, Path]]:
    paths = {"gold": write(tmp_path / f"gold{case.gold_suffix}", case.gold),
             "pred": write(tmp_path / f"pred{case.suffix}", case.pred)}
    args = ["metrics", *case.args, "--gold", str(paths["gold"]), "--pred", str(paths["pred"])]
    if case.pred_after is not None:
        paths["pred_after"] = write(tmp_path / "after.jsonl", case.pred_after)
        args += ["--pred-after", str(paths["pred_after"]), "--n-boot", "50"]
    return args, paths


def dotted(report: dict, path: str):
    value = report
    for part in path.split(".", 1) if path.startswith("counts.") else path.split("."):
        value = value[part]
    return value


def check(case: Case, code: int, stdout: str, output: str, paths: dict[str, Path]) -> None:
    assert "Traceback" not in output, output
    if case.error:
        assert code == 2, output
        flat = " ".join(output.split())
        for text in case.error:
            assert text.format(**{k: str(v) for k, v in paths.items()}) in flat, (text, output)
    else:
        assert code == 0, output
        report = json.loads(stdout)
        for path, value in case.counts.items():
            assert dotted(report, path) == value, (path, report)


def test_the_battery_is_big_enough():
    assert len(CASES) >= 30 and sum(case.subprocess for case in CASES) >= 5
    assert {case.args[0] for case in CASES} == {"innoeval", "siqa", "reviewmt", "novelty"}


@pytest.mark.parametrize("case", [c for c in CASES if not c.subprocess], ids=lambda c: c.name)
def test_malformed_input_in_process(case: Case, tmp_path: Path):
    args, paths = arguments(case, tmp_path)
    result = CliRunner().invoke(cli_app, [*args, *([] if case.error else ["--json"])])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    check(case, result.exit_code, result.stdout, result.output, paths)


@pytest.mark.server  # a CLI subprocess per case
@pytest.mark.parametrize("case", [c for c in CASES if c.subprocess], ids=lambda c: c.name)
def test_malformed_input_as_a_subprocess(case: Case, tmp_path: Path):
    args, paths = arguments(case, tmp_path)
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "service.cli", *args, *([] if case.error else ["--json"])],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    check(case, done.returncode, done.stdout, done.stdout + done.stderr, paths)


def test_malformed_input_over_http_on_the_real_server(server_factory, tmp_path: Path):
    server = server_factory(tmp_path / "home")
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answer = client.post("/v1/metrics/reviewmt/review", json={
            "gold": [{"id": "r1", "decision": "accept", "scores": ["6", "8"]}],
            "predictions": [{"id": "r1", "decision": "accept"}]})
        assert answer.status_code == 422
        assert answer.json()["detail"][0]["loc"] == ["body", "gold", 0, "scores[0]"]

        answer = client.post("/v1/metrics/siqa/u", json={
            "gold": [{"id": "q1", "answer": "A", "choices": ["x", "y"]}], "predictions": [{"id": "q1",
                                                                                          "prediction": "D"}]})
        assert answer.status_code == 200 and answer.json()["counts"]["out_of_range"] == 1

        body = {"gold": [json.loads(line) for line in POINTWISE_GOLD.splitlines()],
                "predictions": [{"id": 1, "prediction": 1}, {"id": 2, "prediction": "maybe"}]}
        strict = client.post("/v1/metrics/novelty/pointwise", json=body).json()
        reference = client.post("/v1/metrics/novelty/pointwise", params={"compat": "reference"}, json=body).json()
        assert strict["compat"] == "strict" and strict["metrics"] == strict["strict"]["metrics"]
        assert strict["metrics"]["accuracy"] == 0.5 and strict["counts"]["invalid"] == 1
        assert reference["compat"] == "reference" and reference["metrics"] == reference["reference"]["metrics"]
        assert reference["metrics"]["accuracy"] == 1.0 and reference["n"] == 1
        assert reference["reference"]["counts"]["dropped_unreadable"] == 1

        answer = client.post("/v1/metrics/novelty/pointwise", params={"compat": "leaderboard"}, json=body)
        assert answer.status_code == 422
    assert "Traceback" not in server.log_text()


# ------------------------------------------------------------------ random records: input errors, never crashes

VALUES = [None, True, 0, 1, 2, -3, 1.5, float("nan"), "", "A", "B", "tie", "oral", "Accept (Oral)", "Reject", "x1",
          "y1", "p1", "Score: 6", "novel", "7", "[/]"]
FIELDS = ["id", "paper_id", "a", "b", "label", "decision", "prediction", "answer", "type", "choices", "perception",
          "knowledge", "scores", "rating", "reviews", "summary", "best", "ranking", "query", "matches", "paper_a",
          "paper_b", "difficulty", "setting", "category", "paper_internal_id", "query_category", "text"]
VALID = {  # one valid gold record and one valid prediction per task, to be damaged at random
    ("innoeval", "points"): ({"paper_id": "p1", "decision": "Accept (Oral)"}, {"id": "p1", "prediction": "oral"}),
    ("innoeval", "groups"): (GROUP, {"id": "q", "ranking": ["q", "s", "p", "r"]}),
    ("innoeval", "pairs"): (PAIR, {"a": "1", "b": "2", "prediction": "B"}),
    ("siqa", "u"): ({"id": "p1", "answer": "A", "type": "what"}, {"id": "p1", "prediction": "A"}),
    ("siqa", "s"): ({"id": "p1", "perception": 3, "knowledge": 2},
                    {"id": "p1", "perception": [0, 0, 1, 0, 0], "knowledge": [0, 1, 0, 0, 0]}),
    ("reviewmt", "review"): ({"id": "p1", "decision": "accept", "scores": [6]},
                             {"id": "p1", "reviews": ["Score: 6"], "decision": "accept"}),
    ("novelty", "pairwise"): ({"id": "p1", "a": "x1", "b": "y1", "label": "A"}, {"id": "p1", "prediction": "A"}),
    ("novelty", "pointwise"): ({"id": "p1", "label": "novel"}, {"id": "p1", "prediction": "novel"}),
    ("novelty", "audit"): ({"id": "p1", "a": "x1", "b": "y1", "label": "A"}, {"id": "p1", "prediction": "A"}),
}


def random_value(rng, depth=0):
    roll = rng.random()
    if depth < 2 and roll < 0.15:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    if depth < 2 and roll < 0.25:
        return {key: random_value(rng, depth + 1) for key in rng.sample(FIELDS, rng.randint(0, 4))}
    return rng.choice(VALUES)


def damaged(rng, record):
    record = dict(record)
    for key in rng.sample(FIELDS, rng.randint(0, 6)):
        record[key] = random_value(rng)
    if record and rng.random() < 0.2:
        record.pop(rng.choice(list(record)))
    return record


def test_random_records_give_input_errors_or_reports_never_a_crash():
    rng = random.Random(20261201)
    outcomes = {"report": 0, "input error": 0}
    for _ in range(1500):
        task = rng.choice(list(VALID))
        gold_record, prediction = VALID[task]
        gold = [damaged(rng, gold_record) if rng.random() < 0.5 else dict(gold_record)
                for _ in range(rng.randint(1, 4))]
        predictions = [damaged(rng, prediction) if rng.random() < 0.6 else dict(prediction)
                       for _ in range(rng.randint(1, 5))]
        after = [damaged(rng, prediction) for _ in range(rng.randint(1, 4))]
        try:
            report = run_task(TASKS[task], gold=gold, predictions=predictions, predictions_after=after, n_boot=20)
        except MetricsInputError as error:
            assert error.message and (error.source or error.field)
            outcomes["input error"] += 1
        else:
            assert report.strict.n >= 1 and report.reference.n >= 0
            outcomes["report"] += 1
    assert min(outcomes.values()) > 200, outcomes
