"""Novelty-judge metrics: pairwise, pointwise and the two-run audit (flip rate, paired bootstrap)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from service.metrics.novelty import audit_pairwise, paired_bootstrap, score_pairwise, score_pointwise
from service.metrics.parsing import MetricsInputError

GOLD = [{"id": f"p{i}", "a": f"x{i}", "b": f"y{i}", "label": "A"} for i in range(1, 5)]


def run(ids, verdicts):
    return [{"id": f"p{i}", "prediction": v} for i, v in zip(ids, verdicts)]


def test_four_pair_example():
    before = run([1, 2, 3, 4], "AAAB")
    after = run([4, 3, 2, 1], "ABAA")  # rows in another order: aligned by id
    report = audit_pairwise(GOLD, before, predictions_after=after)
    assert report.metrics["before.accuracy"] == 0.75 and report.metrics["after.accuracy"] == 0.75
    assert (report.counts["flips"], report.counts["compared"]) == (2, 4)
    assert report.metrics["flip_rate"] == 0.5
    assert (report.counts["became_right"], report.counts["became_wrong"]) == (1, 1)
    assert report.details["flip_ids"] == ["p3", "p4"]
    low, high = report.metrics["accuracy_difference.ci95_low"], report.metrics["accuracy_difference.ci95_high"]
    assert low <= 0.0 <= high


def test_four_pair_example_by_position_would_differ():
    after = run([4, 3, 2, 1], "AAAB")  # same verdict string as before, different pairs
    report = audit_pairwise(GOLD, run([1, 2, 3, 4], "AAAB"), predictions_after=after)
    assert report.counts["flips"] == 2 and report.metrics["after.accuracy"] == 0.75


def test_errors_empty_mismatched_ids_and_gold_tie():
    with pytest.raises(MetricsInputError, match="empty"):
        audit_pairwise(GOLD, [], predictions_after=run([1], "A"))
    with pytest.raises(MetricsInputError, match="empty"):
        score_pairwise([], run([1], "A"))
    with pytest.raises(MetricsInputError) as error:
        audit_pairwise(GOLD, run([1, 2], "AA"), predictions_after=[{"id": "q1", "prediction": "A"}])
    assert "none of the 1 prediction ids" in str(error.value) and error.value.source == "predictions_after"
    tie_gold = GOLD[:3] + [{"id": "p4", "a": "x4", "b": "y4", "label": "tie"}]
    with pytest.raises(MetricsInputError, match="tie") as error:
        score_pairwise(tie_gold, run([1], "A"))
    assert error.value.location() == "gold[3].label"


def test_pairwise_ties_swaps_and_accounting():
    gold = GOLD + [{"id": "p5", "a": "x5", "b": "y5", "label": "y5"}]
    predictions = [
        {"id": "p1", "prediction": "A"},  # right
        {"id": "p2", "a": "y2", "b": "x2", "prediction": "B"},  # swapped presentation, B = x2: right
        {"id": "p3", "prediction": "tie"},  # 0.5
        {"id": "p4", "prediction": "maybe"},  # invalid
        {"id": "p4", "prediction": "A"},  # ... and duplicated with another answer
        {"id": "zz", "prediction": "A"},  # unknown; p5 missing
    ]
    report = score_pairwise(gold, predictions)
    assert report.metrics["accuracy"] == pytest.approx(2.5 / 5)
    assert report.metrics["accuracy_strict"] == pytest.approx(2 / 5)
    assert report.metrics["accuracy_without_ties"] == pytest.approx(2 / 4) and report.counts["n_without_ties"] == 4
    assert (report.counts["missing"], report.counts["duplicate_conflicting"], report.counts["unknown_id"]) == (1, 1, 1)


def test_pairwise_prediction_for_other_ideas_is_invalid():
    report = score_pairwise(GOLD[:1], [{"id": "p1", "a": "x1", "b": "zz", "prediction": "A"}])
    assert report.counts["invalid"] == 1 and report.metrics["accuracy"] == 0.0


def test_audit_unequal_coverage_and_settings():
    gold = [dict(g, setting="human" if i < 2 else "human+generated") for i, g in enumerate(GOLD)]
    before = run([1, 2, 3, 4], "AAAA")
    after = run([1, 2, 3], ["A", "B", "nonsense"])
    report = audit_pairwise(gold, before, predictions_after=after)
    assert report.counts["compared"] == 2 and report.counts["only_before"] == 2
    assert report.counts["after.missing"] == 1 and report.counts["after.invalid"] == 1
    assert report.metrics["flip_rate"] == 0.5
    assert report.metrics["by_setting.human.flip_rate"] == 0.5
    assert report.metrics["by_setting.human+generated.flip_rate"] is None
    assert report.metrics["by_setting.human+generated.after.accuracy"] == 0.0


def test_bootstrap_is_seeded_and_brackets_the_difference():
    rng = np.random.default_rng(1)
    before, after = rng.integers(0, 2, 200).astype(float), rng.integers(0, 2, 200).astype(float)
    first = paired_bootstrap(before, after, n_boot=500, seed=7)
    assert first == paired_bootstrap(before, after, n_boot=500, seed=7)
    assert first != paired_bootstrap(before, after, n_boot=500, seed=8)
    assert first[0] <= (after - before).mean() <= first[1]
    assert paired_bootstrap(np.ones(5), np.ones(5), n_boot=50) == (0.0, 0.0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["novel", "not novel", "Novel", "yes", "no"])),
                min_size=1, max_size=40))
def test_pointwise_equals_sklearn(rows):
    gold = [{"id": str(i), "label": "novel" if g else "not novel"} for i, (g, _) in enumerate(rows)]
    predictions = [{"id": str(i), "prediction": p} for i, (_, p) in enumerate(rows)][::-1]
    report = score_pointwise(gold, predictions)
    truth = ["novel" if g else "not_novel" for g, _ in rows]
    predicted = ["novel" if p.lower() in ("novel", "yes") else "not_novel" for _, p in rows]
    assert report.metrics["accuracy"] == pytest.approx(accuracy_score(truth, predicted))
    assert report.metrics["macro_f1"] == pytest.approx(f1_score(truth, predicted, average="macro", zero_division=0))


def test_pointwise_invalid_and_setting():
    gold = [{"id": "1", "label": "novel", "setting": "h"}, {"id": "2", "label": "not novel", "setting": "h"},
            {"id": "3", "label": "novel", "setting": "g"}]
    report = score_pointwise(gold, [{"id": "1", "prediction": "novel"}, {"id": "2", "prediction": "somewhat"}])
    assert report.metrics["accuracy"] == pytest.approx(1 / 3)
    assert report.metrics["by_setting.h.accuracy"] == 0.5 and report.metrics["by_setting.g.accuracy"] == 0.0
    assert (report.counts["invalid"], report.counts["missing"]) == (1, 1)


# --------------------------------------------------------------------------- integers as predictions and ids


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
