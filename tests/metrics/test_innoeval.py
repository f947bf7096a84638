"""InnoEval metrics: points, groups (LIS), pairs, and the real sample files as gold."""

import json
import random
from itertools import combinations, permutations
from math import factorial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from service.metrics.innoeval import LABELS, parse_decision, score_groups, score_pairs, score_points
from service.metrics.parsing import MetricsInputError
from service.metrics.ranking import expected_lis, lis_length, lis_match, lis_match_chance

NAMES = {"reject": "Reject", "poster": "Accept (Poster)", "spotlight": "Accept (Spotlight)",
         "oral": "Accept (Oral)", "highlight": "Accept (Highlight)"}


def brute_lis(values):
    """Longest strictly increasing subsequence by trying every subset."""
    for size in range(len(values), 0, -1):
        for subset in combinations(values, size):
            if all(x < y for x, y in zip(subset, subset[1:])):
                return size
    return 0


# ---------------------------------------------------------------------------------------------- LIS


@pytest.mark.parametrize("n", range(1, 9))
def test_lis_match_is_one_for_gold_order_and_one_over_n_reversed(n):
    gold = [f"p{i}" for i in range(n)]
    assert lis_match(gold, gold) == 1.0
    assert lis_match(gold, gold[::-1]) == pytest.approx(1 / n)


@pytest.mark.parametrize("n", range(1, 7))
def test_lis_equals_brute_force_on_all_permutations(n):
    gold = [f"p{i}" for i in range(n)]
    for order in permutations(range(n)):
        assert lis_length(order) == brute_lis(order)
        assert lis_match(gold, [gold[i] for i in order]) == brute_lis(order) / n


@pytest.mark.parametrize("n", range(1, 7))
def test_lis_chance_equals_enumeration(n):
    mean = sum(brute_lis(order) for order in permutations(range(n))) / factorial(n)
    assert lis_match_chance(n) == pytest.approx(mean / n, abs=1e-12)


def test_lis_chance_for_four_is_0604():
    assert round(lis_match_chance(4), 3) == 0.604
    assert expected_lis(4) * 24 == 58  # total LIS length over the 24 permutations of 4


# ------------------------------------------------------------------------------------------- points


def points_gold(labels):
    return [{"paper_id": f"p{i}", "decision": NAMES[label]} for i, label in enumerate(labels)]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), min_size=1, max_size=40),
       st.randoms(use_true_random=False))
def test_points_accuracy_and_macro_f1_equal_sklearn(pairs, rnd):
    truth = [t for t, _ in pairs]
    predicted = [p for _, p in pairs]
    predictions = [{"id": f"p{i}", "prediction": label} for i, label in enumerate(predicted)]
    rnd.shuffle(predictions)  # aligned by id, not by position
    report = score_points(points_gold(truth), predictions)
    assert report.metrics["full.accuracy"] == pytest.approx(accuracy_score(truth, predicted))
    assert report.metrics["full.macro_f1"] == pytest.approx(f1_score(truth, predicted, average="macro",
                                                                     zero_division=0))
    binary = lambda labels: ["reject" if x == "reject" else "accept" for x in labels]  # noqa: E731
    assert report.metrics["binary.macro_f1"] == pytest.approx(
        f1_score(binary(truth), binary(predicted), average="macro", zero_division=0))


def test_missing_and_invalid_points_count_wrong_not_filled_with_gold():
    gold = points_gold(["oral", "poster", "reject", "spotlight"])
    predictions = [{"id": "p0", "prediction": "oral"}, {"id": "p1", "prediction": "Accept"},
                   {"id": "p2", "prediction": "poster or reject"}, {"id": "zz", "prediction": "oral"}]
    report = score_points(gold, predictions)
    assert report.n == 4
    assert report.metrics["full.accuracy"] == 0.25  # the reference would fill p3 with its gold: 0.5
    assert (report.counts["missing"], report.counts["invalid"], report.counts["unknown_id"]) == (1, 2, 1)
    confusion = report.details["full.confusion"]
    assert confusion["columns_predicted"][-1] == "<no valid prediction>"
    assert sum(row[-1] for row in confusion["matrix"]) == 3


@pytest.mark.parametrize("text,label", [
    ("Accept (Oral)", "oral"), ("oral", "oral"), ("Oral", "oral"), ("Reject", "reject"), ("rejected", "reject"),
    ("Accept (Highlight)", "highlight"), ("spotlight", "spotlight"), ("Accept", None), ("oral or poster", None),
    ("", None), (None, None)])
def test_parse_decision(text, label):
    assert parse_decision(text) == label


def test_duplicate_predictions_agreeing_are_scored_once_conflicting_count_wrong():
    gold = points_gold(["oral", "poster"])
    predictions = [{"id": "p0", "prediction": "oral"}, {"id": "p0", "prediction": "Accept (Oral)"},
                   {"id": "p1", "prediction": "poster"}, {"id": "p1", "prediction": "reject"}]
    report = score_points(gold, predictions)
    assert report.metrics["full.accuracy"] == 0.5
    assert report.counts["duplicate"] == 2 and report.counts["duplicate_conflicting"] == 1


def test_empty_and_mismatched_inputs_are_errors():
    with pytest.raises(MetricsInputError, match="empty"):
        score_points([], [{"id": "p0", "prediction": "oral"}])
    with pytest.raises(MetricsInputError, match="empty"):
        score_points(points_gold(["oral"]), [])
    with pytest.raises(MetricsInputError, match="none of the 1 prediction ids"):
        score_points(points_gold(["oral"]), [{"id": "other", "prediction": "oral"}])
    with pytest.raises(MetricsInputError) as error:
        score_points([{"paper_id": "p0", "decision": "Withdrawn"}], [{"id": "p0", "prediction": "oral"}])
    assert error.value.location() == "gold[0].decision"


# ------------------------------------------------------------------------------------------- groups


def group(query, tiers):
    """A gold group in the real file's shape: query of the first tier, matches for the others."""
    members = {tier: f"{query}-{tier}" for tier in tiers[1:]}
    return {"query": {"paper_id": query, "decision": NAMES[tiers[0]]}, "query_internal_id": query,
            "query_category": tiers[0],
            "matches": {tier: {"paper": {"id": pid}, "paper_internal_id": pid, "category": tier}
                        for tier, pid in members.items()}}


def test_groups_best_lis_exact_and_chance():
    gold = [group("q1", ["oral", "reject", "poster", "spotlight"]),
            group("q2", ["poster", "reject", "oral", "spotlight"])]
    predictions = [
        {"id": "q1", "best": "q1", "ranking": ["q1", "q1-spotlight", "q1-poster", "q1-reject"]},  # exact
        {"id": "q2", "ranking": ["q2-reject", "q2", "q2-spotlight", "q2-oral"]},  # reversed, best from ranking
    ]
    report = score_groups(gold, predictions)
    assert report.metrics == {"best_accuracy": 0.5, "lis_match": pytest.approx((1 + 0.25) / 2),
                              "exact_order_accuracy": 0.5}
    assert report.chance["best_accuracy"] == 0.25
    assert report.chance["lis_match"] == pytest.approx(lis_match_chance(4))
    assert report.counts["best_from_ranking"] == 1


def test_groups_invalid_ranking_and_repeated_gold_group():
    gold = [group("q1", ["oral", "reject", "poster", "spotlight"])] * 2  # the real file repeats a group
    predictions = [{"id": "q1", "best": "q1", "ranking": ["q1", "q1-poster", "q1-poster", "q1-reject"]}]
    report = score_groups(gold, predictions)
    assert report.n == 1 and report.counts["gold_duplicates"] == 1
    assert report.counts["invalid_ranking"] == 1
    assert report.metrics == {"best_accuracy": 1.0, "lis_match": 0.0, "exact_order_accuracy": 0.0}


def test_conflicting_gold_group_is_left_out_and_reported():
    gold = [group("q1", ["oral", "reject", "poster", "spotlight"]), group("q1", ["oral", "reject", "poster"]),
            group("q2", ["oral", "reject"])]
    report = score_groups(gold, [{"id": "q2", "best": "q2", "ranking": ["q2", "q2-reject"]}])
    assert report.n == 1 and report.counts["gold_conflicts"] == 1
    assert report.chance["lis_match"] == pytest.approx(0.75)


# -------------------------------------------------------------------------------------------- pairs


def pair(a, decision_a, b, decision_b, difficulty="easy", group_id="g"):
    return {"group_id": group_id, "difficulty": difficulty, "pair_type": "x",
            "paper_a": {"paper_id": a, "decision": NAMES[decision_a]},
            "paper_b": {"paper_id": b, "decision": NAMES[decision_b]}}


def test_pairs_swapped_presentation_and_letters_score_the_same():
    gold = [pair("x", "oral", "y", "reject"), pair("u", "poster", "v", "spotlight", "difficult")]
    by_id = [{"a": "x", "b": "y", "prediction": "x"}, {"a": "u", "b": "v", "prediction": "u"}]
    swapped = [{"a": "y", "b": "x", "prediction": "B"}, {"a": "v", "b": "u", "prediction": "(B)"}]
    first, second = score_pairs(gold, by_id), score_pairs(gold, swapped)
    assert first.metrics == second.metrics == {"accuracy": 0.5, "accuracy.easy": 1.0, "accuracy.hard": 0.0}


def test_pairs_gold_tie_is_reported_not_defaulted_and_tie_prediction_invalid():
    gold = [pair("x", "oral", "y", "reject"), pair("s", "poster", "t", "poster"),
            pair("u", "oral", "v", "reject", group_id="g")]  # group_id repeats: not a key
    predictions = [{"a": "x", "b": "y", "prediction": "tie"}, {"a": "s", "b": "t", "prediction": "A"},
                   {"a": "u", "b": "v", "prediction": "A"}]
    report = score_pairs(gold, predictions)
    assert report.n == 2 and report.counts["gold_ties"] == 1
    assert report.counts["invalid"] == 1 and report.metrics["accuracy"] == 0.5
    assert report.details["gold_tie_pairs"] == ["s|t"]


def test_pairs_only_ties_is_an_error():
    with pytest.raises(MetricsInputError, match="tie"):
        score_pairs([pair("s", "poster", "t", "poster")], [{"a": "s", "b": "t", "prediction": "A"}])


# --------------------------------------------------------------------------------- real sample files


@pytest.mark.shared
def test_real_points_file_parses_as_gold(innoeval_sample):
    path = innoeval_sample("conference_points.sample.jsonl")
    gold = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    predictions = [{"id": record["paper_id"], "prediction": record["decision"]} for record in gold]
    report = score_points(gold, predictions)
    assert report.n == len(gold) and report.metrics["full.accuracy"] == 1.0
    assert report.counts["gold_duplicates"] == 0


@pytest.mark.shared
def test_real_groups_file_parses_as_gold(innoeval_sample):
    gold = json.loads(innoeval_sample("conference_groups.sample.json").read_text())
    rng = random.Random(0)
    predictions = []
    for record in gold:
        papers = [record["query"]["paper_id"]] + [m["paper_internal_id"] for m in record["matches"].values()]
        rng.shuffle(papers)
        predictions.append({"id": record["query"]["paper_id"], "ranking": papers})
    report = score_groups(gold, predictions)
    distinct = len({record["query"]["paper_id"] for record in gold})
    assert report.n == distinct and report.counts["gold_duplicates"] == len(gold) - distinct
    assert report.counts["invalid"] == 0 and report.details["group_sizes"] == {"4": distinct}
    assert report.chance["lis_match"] == pytest.approx(0.6041666, abs=1e-6)


@pytest.mark.shared
def test_real_pairs_files_parse_as_gold(innoeval_sample):
    gold = (json.loads(innoeval_sample("conference_pairs_easy.sample.json").read_text())
            + json.loads(innoeval_sample("conference_pairs_diff.sample.json").read_text()))
    tier = {"Reject": 1, "Accept (Poster)": 2, "Accept (Spotlight)": 3, "Accept (Oral)": 4}
    predictions = []
    for record in gold:  # a perfect judge, shown b first
        a, b = record["paper_a"], record["paper_b"]
        better = a if tier[a["decision"]] > tier[b["decision"]] else b
        predictions.append({"a": b["paper_id"], "b": a["paper_id"], "prediction": better["paper_id"]})
    report = score_pairs(gold, predictions)
    assert report.metrics["accuracy"] == 1.0
    assert {"accuracy.easy", "accuracy.hard"} <= report.metrics.keys()
    keys = {tuple(sorted((r["paper_a"]["paper_id"], r["paper_b"]["paper_id"]))) for r in gold}
    assert report.n + report.counts["gold_ties"] == len(keys)
    assert report.counts["gold_duplicates"] == len(gold) - len(keys)
    assert report.counts["duplicate_conflicting"] == 0
