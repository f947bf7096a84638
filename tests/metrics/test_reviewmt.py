"""ReviewMT metrics: decision and score parsers, hit rates, MAE and decision F1."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, mean_absolute_error
from typer.testing import CliRunner

from service.cli import app as cli_app

from service.metrics.parsing import MetricsInputError
from service.metrics.reviewmt import parse_decision, parse_score, score_reviews


@pytest.mark.parametrize("text,decision", [
    ("reject", "reject"), ("Accept", "accept"), ("we recommend accepting", "accept"),
    ("We recommend accepting this paper.", "accept"), ("not accepted", "reject"),
    ("The paper should not be rejected.", "accept"), ("We do not recommend accepting this paper", "reject"),
    ("acceptance", None),  # the reference counts this as accept
    ("The paper falls below the acceptance threshold.", None), ("I recommend acceptance", "accept"),
    ("Decision: Accept (Poster)", "accept"), ("Final decision: reject. The paper is not ready for acceptance.",
                                              "reject"),
    ("Recommendation: rejection", "reject"), ("weak reject", "reject"),
    ("Although some may reject it, we accept", None),  # both decisions
    ("There is no doubt that we accept it", "accept"), ("", None), (None, None),
])
def test_parse_decision(text, decision):
    assert parse_decision(text) == decision


@pytest.mark.parametrize("text,score", [
    ("Score: 6", 6.0), ("rating: 6/10", 6.0), ("Rating: 6: marginally above the acceptance threshold", 6.0),
    ("score of 7 out of 10", 7.0), ("Soundness score: 3\nRating: 8", 8.0), ("Overall score: 5, rating: 6", 5.0),
    ("score: 6.5", 6.5), ("Score: 11", None), ("Score: 0", None), ("rating: 8/5", None),
    ("Score: 6 and later score: 7", None), ("no number here", None), ("I rate it 6", None), (None, None),
])
def test_parse_score(text, score):
    assert parse_score(text) == score


def paper(i, decision, rating):
    return {"id": f"p{i}", "decision": decision, "rating": rating}


def test_hit_rates_mae_and_decision_metrics():
    gold = [paper(0, "Accept (Poster)", 7.0), paper(1, "Reject", 4.0), paper(2, "Reject", 3.0),
            {"id": "p3", "decision": "accept", "scores": [8, 6]}]
    predictions = [
        {"id": "p0", "summary": "A method.", "reviews": ["Score: 6", "rating: 8/10", "great paper"],
         "decision": "We recommend accepting."},
        {"id": "p1", "summary": "  ", "reviews": [{"text": "Rating: 5"}], "decision": "below the acceptance bar"},
        {"id": "p2", "summary": "x", "reviews": "not a list", "decision": "Reject"},
        {"id": "p9", "summary": "x", "reviews": [], "decision": "Reject"},
    ]
    report = score_reviews(gold, predictions)
    m, c = report.metrics, report.counts
    assert m["paper_hit_rate"] == pytest.approx(2 / 4)
    assert (c["reviews_generated"], c["reviews_parsed"]) == (4, 3)
    assert m["review_hit_rate"] == pytest.approx(3 / 4)
    assert m["decision_hit_rate"] == pytest.approx(2 / 4)
    assert m["score_mae"] == pytest.approx((1 + 1 + 1) / 3)
    assert (c["missing"], c["invalid"], c["unknown_id"], c["papers_without_reviews"]) == (1, 1, 1, 1)
    truth = ["accept", "reject", "reject", "accept"]
    predicted = ["accept", "none", "reject", "none"]
    assert m["decision.accuracy"] == 0.5
    assert m["decision.f1_accept"] == pytest.approx(f1_score(truth, predicted, labels=["accept"], average="macro"))
    assert m["decision.macro_f1"] == pytest.approx(f1_score(truth, predicted, labels=["accept", "reject"],
                                                            average="macro"))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["accept", "reject"]), st.sampled_from(["accept", "reject"]),
                          st.integers(1, 10), st.integers(1, 10)), min_size=1, max_size=30))
def test_mae_and_f1_equal_sklearn(rows):
    gold = [paper(i, t, float(g)) for i, (t, _, g, _) in enumerate(rows)]
    predictions = [{"id": f"p{i}", "summary": "s", "reviews": [f"Score: {s}"], "decision": f"Decision: {p}"}
                   for i, (_, p, _, s) in enumerate(rows)]
    report = score_reviews(gold, predictions[::-1])
    truth = [t for t, *_ in rows]
    predicted = [p for _, p, *_ in rows]
    assert report.metrics["score_mae"] == pytest.approx(mean_absolute_error([g for *_, g, _ in rows],
                                                                            [s for *_, s in rows]))
    assert report.metrics["decision.f1_accept"] == pytest.approx(
        f1_score(truth, predicted, pos_label="accept", average="binary", zero_division=0)
        if "accept" in truth + predicted else 0.0)
    labels = sorted(set(truth) | set(predicted))
    assert report.metrics["decision.macro_f1"] == pytest.approx(
        f1_score(truth, predicted, labels=labels, average="macro", zero_division=0))


def test_errors():
    with pytest.raises(MetricsInputError, match="accept/reject"):
        score_reviews([{"id": "p0", "decision": "maybe"}], [{"id": "p0", "decision": "accept"}])
    with pytest.raises(MetricsInputError, match="repeated"):
        score_reviews([paper(0, "accept", 5), paper(0, "accept", 5)], [{"id": "p0", "decision": "accept"}])
    with pytest.raises(MetricsInputError, match="empty"):
        score_reviews([paper(0, "accept", 5)], [])


# ------------------------------------------------------------------------------- ReviewMT gold as strings


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


# ---------------------------------------------------------------------------- ReviewMT per-review gold


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


# -------------------------------------------------------------------------------- reviews as a string


def test_reviewmt_reviews_given_as_a_string_are_counted():
    gold = [{"id": "r1", "decision": "accept", "rating": 6}]
    report = score_reviews(gold, [{"id": "r1", "reviews": "Score: 6", "decision": "accept"}])
    assert report.counts["invalid_reviews"] == 1 and report.details["invalid_reviews_ids"] == ["r1"]
