"""The input bugs of the metric-fidelity issue, one test each (each fails on the code before the fix)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from service.cli import app as cli_app
from service.metrics.novelty import audit_pairwise, paired_bootstrap, score_pairwise, score_pointwise
from service.metrics.parsing import MetricsInputError, read_records
from service.metrics.reviewmt import score_reviews
from service.metrics.siqa import score_understanding

ROWS = [{"id": "p1", "prediction": "A", "note": "é"}, {"id": 2, "prediction": 0, "note": None}]


# ------------------------------------------------------------------------------------- 7: BOM, CSV, one line


@pytest.mark.parametrize("layout", ["jsonl", "array-one-line", "array-pretty", "csv"])
@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_reader_accepts_bom_crlf_and_every_layout(tmp_path, layout, bom, newline):
    if layout == "jsonl":
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in ROWS)
    elif layout == "array-one-line":
        text = json.dumps(ROWS, ensure_ascii=False)
    elif layout == "array-pretty":
        text = json.dumps(ROWS, ensure_ascii=False, indent=2)
    else:
        text = "id,prediction,note\np1,A,é\n2,0,\n"
    path = tmp_path / f"file.{'csv' if layout == 'csv' else 'json'}"
    path.write_bytes((("\ufeff" if bom else "") + text.replace("\n", newline)).encode("utf-8"))
    records, where = read_records(path)
    assert records == ROWS
    if layout == "array-one-line":
        assert where[1].startswith(f"{path} item 2 (line 1, column ")
    elif layout in ("jsonl", "csv"):
        assert where == [f"{path} line {n}" for n in ((1, 2) if layout == "jsonl" else (2, 3))]


# ------------------------------------------------------------------------------- 1: ReviewMT gold as strings


@pytest.mark.parametrize("scores,field", [(["6", "8"], "scores[0]"), ([6, None], "scores[1]"),
                                          ("6, 8", "scores"), ([6, True], "scores[1]")])
def test_reviewmt_gold_scores_of_the_wrong_type_name_the_field(scores, field):
    with pytest.raises(MetricsInputError) as error:
        score_reviews([{"id": "r1", "decision": "accept", "scores": scores}], [{"id": "r1", "decision": "accept"}])
    assert error.value.location() == f"gold[0].{field}"


def test_reviewmt_gold_scores_as_strings_exit_2_on_the_cli(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "r1", "decision": "accept", "scores": ["6", "8"]}) + "\n")
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"id": "r1", "decision": "accept"}) + "\n")
    result = CliRunner().invoke(cli_app, ["metrics", "reviewmt", "--gold", str(gold), "--pred", str(pred)])
    assert result.exit_code == 2 and f"{gold} line 1, field 'scores[0]'" in " ".join(result.output.split())


# --------------------------------------------------------------------------- 2: integers as predictions and ids


def test_pointwise_integer_verdicts_are_read_as_the_reference_judge_emits_them():
    gold = [{"id": 1, "label": "novel"}, {"id": 2, "label": "not novel"}, {"id": 3, "label": "novel"}]
    report = score_pointwise(gold, [{"id": 1, "prediction": 1}, {"id": 2, "prediction": 0},
                                    {"id": 3, "prediction": 7}])
    assert report.metrics["accuracy"] == pytest.approx(2 / 3) and report.counts["invalid"] == 1


def test_pairwise_integer_idea_ids_and_winner_codes():
    gold = [{"id": 1, "a": 10, "b": 11, "label": "B"}, {"id": 2, "a": "x", "b": "y", "label": "A"},
            {"id": 3, "a": "u", "b": "v", "label": "A"}]
    predictions = [{"id": 1, "a": 11, "b": 10, "prediction": 11},  # an integer idea id, swapped presentation
                   {"id": 2, "prediction": 0},  # the judge's code for idea A
                   {"id": 3, "prediction": 2}]  # ... and for a tie
    report = score_pairwise(gold, predictions)
    assert report.counts["invalid"] == 0 and report.metrics["accuracy"] == pytest.approx(2.5 / 3)


# ---------------------------------------------------------------------------- 3: ReviewMT per-review gold


def test_reviewmt_score_mae_uses_each_reviewers_own_score():
    gold = [{"id": "r1", "decision": "accept", "scores": [8, 2]}]
    predictions = [{"id": "r1", "reviews": ["Score: 7", "Score: 3"], "decision": "accept"}]
    report = score_reviews(gold, predictions)
    assert report.metrics["score_mae"] == 1.0  # against the paper's mean 5 it would be 2.0
    assert report.counts["reviews_scored_per_reviewer"] == 2
    assert report.reference.metrics["review_mae_mean"] == 1.0


def test_reviewmt_reviews_beyond_the_gold_count_are_counted_not_scored():
    gold = [{"id": "r1", "decision": "accept", "scores": [8]}]
    report = score_reviews(gold, [{"id": "r1", "reviews": ["Score: 7", "Score: 3"], "decision": "accept"}])
    assert report.metrics["score_mae"] == 1.0 and report.counts["reviews_without_gold"] == 1


# -------------------------------------------------------------------------------- 4: reviews as a string


def test_reviewmt_reviews_given_as_a_string_are_counted():
    gold = [{"id": "r1", "decision": "accept", "rating": 6}]
    report = score_reviews(gold, [{"id": "r1", "reviews": "Score: 6", "decision": "accept"}])
    assert report.counts["invalid_reviews"] == 1 and report.details["invalid_reviews_ids"] == ["r1"]


# ------------------------------------------------------------------------------ 5: SIQA-U and its choices


def test_siqa_u_reads_choices_against_the_items_own_choices():
    gold = [{"id": "q1", "answer": "B", "choices": ["yes", "no"]}, {"id": "q2", "answer": "D",
                                                                   "choices": {"A": 1, "B": 2, "C": 3, "D": 4}}]
    report = score_understanding(gold, [{"id": "q1", "prediction": "D"}, {"id": "q2", "prediction": "D"}])
    assert report.counts["out_of_range"] == 1 and report.counts["invalid"] == 1
    assert report.metrics["accuracy"] == 0.5 and report.details["out_of_range_ids"] == ["q1"]
    with pytest.raises(MetricsInputError, match="own choices") as error:
        score_understanding([{"id": "q1", "answer": "C", "choices": ["yes", "no"]}],
                            [{"id": "q1", "prediction": "A"}])
    assert error.value.location() == "gold[0].answer"


# ----------------------------------------------------------------------------- the paired bootstrap (scipy)


def loop_paired_bootstrap(before, after, *, n_boot, seed, level=0.95):
    """The hand-written loop scipy.stats.bootstrap(paired=True) replaced, kept here to compare figures."""
    difference = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    chunk = max(1, 2_000_000 // max(1, difference.size))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        draws = rng.integers(0, difference.size, size=(stop - start, difference.size))
        means[start:stop] = difference[draws].mean(axis=1)
    tail = (1 - level) / 2 * 100
    return tuple(float(x) for x in np.percentile(means, [tail, 100 - tail]))


@pytest.mark.parametrize("n,n_boot,seed", [(4, 200, 0), (50, 2000, 3), (1500, 2000, 1), (3000, 5000, 9)])
def test_scipy_paired_bootstrap_gives_the_loops_figures(n, n_boot, seed):
    rng = np.random.default_rng(n)
    before, after = rng.choice([0, 0.5, 1], n), rng.choice([0, 0.5, 1], n)
    new = paired_bootstrap(before, after, n_boot=n_boot, seed=seed)
    old = loop_paired_bootstrap(before, after, n_boot=n_boot, seed=seed)
    assert new == pytest.approx(old, abs=2e-16)


def test_paired_bootstrap_of_a_single_pair_is_its_difference():
    assert paired_bootstrap(np.array([0.0]), np.array([1.0]), n_boot=50) == (1.0, 1.0) == \
        loop_paired_bootstrap([0.0], [1.0], n_boot=50, seed=0)


def test_four_pair_audit_interval_is_unchanged():
    gold = [{"id": f"p{i}", "a": f"x{i}", "b": f"y{i}", "label": "A"} for i in range(1, 5)]
    before = [{"id": f"p{i}", "prediction": v} for i, v in zip([1, 2, 3, 4], "AAAB")]
    after = [{"id": f"p{i}", "prediction": v} for i, v in zip([4, 3, 2, 1], "ABAA")]
    report = audit_pairwise(gold, before, predictions_after=after, n_boot=2000, seed=0)
    scores_before, scores_after = np.array([1, 1, 1, 0.0]), np.array([1, 1, 0, 1.0])
    assert (report.metrics["accuracy_difference.ci95_low"], report.metrics["accuracy_difference.ci95_high"]) == \
        loop_paired_bootstrap(scores_before, scores_after, n_boot=2000, seed=0)
    assert "BCa" in report.reference.rule


# ------------------------------------------------------------------------------------------------ --compat


def test_cli_compat_reference_puts_the_reference_first(tmp_path):
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


def test_csv_cells_keep_ids_with_leading_zeros_as_text(tmp_path):
    path = tmp_path / "pred.csv"
    path.write_text("id,prediction,score\n007,B,6.5\n12,,-1e3\n")
    assert read_records(path)[0] == [{"id": "007", "prediction": "B", "score": 6.5},
                                     {"id": 12, "prediction": None, "score": -1000.0}]
