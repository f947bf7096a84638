"""SIQA metrics: the free-text choice parser, U accuracy by type, S correlations from level logits."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score

from service.metrics.parsing import MetricsInputError
from service.metrics.siqa import expected_level, parse_choice, score_scoring, score_understanding


@pytest.mark.parametrize("text,choice", [
    ("B", "B"), ("(B)", "B"), ("Answer: B.", "B"), ("The answer is B because the plot shows a peak.", "B"),
    ("b", "B"), ("**C**", "C"), ("A", "A"), ("A.", "A"), ("(A) the first option", "A"),
    ("The answer is A because the curve rises.", "A"), ("Option A", "A"), ("A is correct", "A"),
    ("A good answer is C", "C"),  # "A" followed by an ordinary word is the article
    ("A and C", None), ("B or D", None), ("It is D. Not B.", None),  # two different letters
    ("None of the options fit", None), ("", None), (None, None), (3, None),
    ("The DNA sample", None),  # letters inside words are not choices
])
def test_parse_choice(text, choice):
    assert parse_choice(text) == choice


def u_gold(answers, types):
    return [{"id": f"q{i}", "answer": a, "type": t, "choices": ["w", "x", "y", "z"]}
            for i, (a, t) in enumerate(zip(answers, types))]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABCD"), st.sampled_from("ABCD")), min_size=1, max_size=40),
       st.randoms(use_true_random=False))
def test_u_accuracy_equals_sklearn(pairs, rnd):
    truth = [t for t, _ in pairs]
    predicted = [p for _, p in pairs]
    predictions = [{"id": f"q{i}", "prediction": f"Answer: {p}."} for i, p in enumerate(predicted)]
    rnd.shuffle(predictions)
    report = score_understanding(u_gold(truth, ["what"] * len(truth)), predictions)
    assert report.metrics["accuracy"] == pytest.approx(accuracy_score(truth, predicted))
    assert report.chance == {"accuracy": 0.25}


def test_u_per_type_mean_and_weighted():
    gold = u_gold("AAAAAA", ["yes-or-no", "Yes/No", "what", "what", "how", "how"])
    predictions = [{"id": "q0", "prediction": "A"}, {"id": "q1", "prediction": "B"},  # yes-or-no 0.5
                   {"id": "q2", "prediction": "A"}, {"id": "q3", "prediction": "A"},  # what 1.0
                   {"id": "q4", "prediction": "A and B"}]  # how: invalid + missing -> 0.0
    report = score_understanding(gold, predictions)
    assert report.metrics["accuracy"] == pytest.approx(3 / 6)
    assert report.metrics["accuracy.yes-or-no"] == 0.5
    assert report.metrics["accuracy.type_mean"] == pytest.approx(0.5)
    assert report.metrics["accuracy.type_weighted"] == pytest.approx(0.2 * 0.5 + 0.3 * 1.0 + 0.5 * 0.0)
    assert (report.counts["invalid"], report.counts["missing"]) == (1, 1)


def test_u_weighted_undefined_without_all_types_and_bad_gold():
    report = score_understanding(u_gold("AB", ["what", "what"]), [{"id": "q0", "prediction": "A"}])
    assert report.metrics["accuracy.type_weighted"] is None and report.notes
    with pytest.raises(MetricsInputError, match="A-D"):
        score_understanding([{"id": "q0", "answer": "E"}], [{"id": "q0", "prediction": "A"}])
    with pytest.raises(MetricsInputError, match="question type"):
        score_understanding([{"id": "q0", "answer": "A", "type": "why"}], [{"id": "q0", "prediction": "A"}])


finite = st.floats(min_value=-20, max_value=20, allow_nan=False)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=0, max_value=5), st.lists(finite, min_size=5, max_size=5)),
                min_size=3, max_size=30))
def test_s_srcc_plcc_equal_scipy(rows):
    gold = [{"id": f"i{k}", "perception": g} for k, (g, _) in enumerate(rows)]
    predictions = [{"id": f"i{k}", "perception": logits} for k, (_, logits) in enumerate(rows)]
    report = score_scoring(gold, predictions)
    truth = [g for g, _ in rows]
    levels = [float(softmax(np.array(logits)) @ np.arange(1, 6)) for _, logits in rows]
    with np.errstate(all="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            srcc, plcc = spearmanr(truth, levels).statistic, pearsonr(truth, levels).statistic
    for name, expected in (("perception.srcc", srcc), ("perception.plcc", plcc)):
        if math.isfinite(expected):
            assert report.metrics[name] == pytest.approx(expected, abs=1e-9)
        else:
            assert report.metrics[name] is None
    if math.isfinite(srcc) and math.isfinite(plcc):
        assert report.metrics["perception.score"] == pytest.approx(max((srcc + plcc) / 2, 0) * 100, abs=1e-7)


def test_expected_level():
    assert expected_level([0, 0, 0, 0, 0]) == pytest.approx(3.0)
    assert expected_level([100, 0, 0, 0, 0]) == pytest.approx(1.0)
    assert expected_level([0, 0, 0, 0, 1e3]) == pytest.approx(5.0)
    for bad in ([1, 2, 3, 4], [1, 2, 3, 4, float("nan")], [1, 2, 3, 4, float("inf")], [1, 2, 3, 4, "5"],
                [True, 0, 0, 0, 0], None, "1 2 3 4 5"):
        assert expected_level(bad) is None


def test_s_invalid_logits_counted_and_coverage_stated():
    gold = [{"id": f"i{k}", "perception": float(k), "knowledge": float(-k)} for k in range(5)]
    good = lambda k: [0, 0, 0, 0, float(k)]  # noqa: E731 - level rises with k
    predictions = [{"id": f"i{k}", "perception": good(k), "knowledge": good(k)} for k in range(4)]
    predictions[3]["knowledge"] = [1, 2, 3]
    report = score_scoring(gold, predictions)
    assert report.metrics["perception.srcc"] == pytest.approx(1.0)
    assert report.metrics["knowledge.srcc"] == pytest.approx(-1.0)
    assert report.metrics["knowledge.score"] == 0.0  # max(., 0)
    assert report.metrics["perception.coverage"] == pytest.approx(4 / 5)
    assert report.counts["knowledge.n_scored"] == 3 and report.counts["knowledge.invalid"] == 1
    assert report.counts["missing"] == 1 and report.counts["invalid"] == 1
    assert report.metrics["score"] == pytest.approx(report.metrics["perception.score"] / 2)


def test_s_errors():
    with pytest.raises(MetricsInputError, match="no gold item"):
        score_scoring([{"id": "i0"}], [{"id": "i0", "perception": [0] * 5}])
    with pytest.raises(MetricsInputError) as error:
        score_scoring([{"id": "i0", "perception": "high"}], [{"id": "i0", "perception": [0] * 5}])
    assert error.value.location() == "gold[0].perception"


# ------------------------------------------------------------------------------ SIQA-U and its choices


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
