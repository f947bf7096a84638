"""Every report's `reference` block against a transcription of that benchmark's own metric code.

Each `ref_*` function below was written here from reading the reference repository's metric function at the commit
the block's `source` names, in that code's own data shapes (a pipeline result per paper, a merged prediction file, a
conversation transcript, a comparisons dict). An adapter turns this project's gold and prediction files into those
shapes, following only the conventions the reference block documents (first copy of a repeated id, a missing
prediction is the reference's failed call, A/B read in the prediction's own order). On seeded files with missing,
empty, malformed, repeated, non-finite and integer-typed predictions the block must equal the transcription
(exactly, or to 1e-9 relative where the level is computed another way), and `strict` must equal an independent
computation of the project's rule (every gold item in the denominator, failures wrong).
"""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import warnings

import numpy as np
import pytest
from scipy.stats import bootstrap, pearsonr, spearmanr
from sklearn.metrics import f1_score
from typer.testing import CliRunner

from service.cli import app as cli_app
from service.metrics import innoeval, novelty, reviewmt, siqa
from service.metrics.novelty import TIE, read_pairwise_gold, read_verdict
from service.metrics.siqa import expected_level, parse_choice

SEEDS = range(6)


def none_for_nan(metrics: dict) -> dict:
    return {key: (None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value))
            for key, value in metrics.items()}


def assert_same_numbers(actual: dict, expected: dict, rel: float = 1e-9) -> None:
    """The same keys, None in the same places, and numbers equal to `rel` relative (issue 21's 1e-9)."""
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        if value is None:
            assert actual[key] is None, key
        else:
            assert actual[key] == pytest.approx(value, rel=rel, abs=0), key


def first_copy(predictions, key="id"):
    found = {}
    for item in predictions:
        found.setdefault(str(item[key]), item)
    return found


# ============================================================================================ InnoEval points
# zjunlp/InnoEval innoeval/pipeline/batch_pipeline.py: normalize_decision, load_dataset, evaluate_accuracy


def ref_normalize_decision(value):
    if value is None:
        return None
    text = str(value).strip().lower()
    exact = {"accept (oral)": "oral", "oral": "oral", "accept (spotlight)": "spotlight", "spotlight": "spotlight",
             "accept (poster)": "poster", "poster": "poster", "reject": "reject", "reject.": "reject"}
    if text in exact:
        return exact[text]
    for word in ("oral", "spotlight", "poster", "reject"):
        if word in text:
            return word
    return None


def ref_evaluate_accuracy(processed):
    """The accuracy and the counts the reference prints (Num items, Evaluable, Matched)."""
    total = matched = 0
    for item, result in processed:
        if result is None:
            continue
        label, predicted = ref_normalize_decision(item["decision"]), ref_normalize_decision(result["final_decision"])
        if label is None or predicted is None:
            continue
        total += 1
        matched += label == predicted
    return {"accuracy": matched / total if total else 0.0, "num_items": len(processed), "evaluable": total,
            "matched": matched}


DECISIONS = ["Accept (Oral)", "Accept (Poster)", "Accept (Spotlight)", "Reject", "Accept (Highlight)"]
POINT_ANSWERS = ["oral", "Accept (Poster)", "Rejected", "spotlight", "poster", "Accept", "maybe", "", 1, None,
                 "Accept (Oral) or poster", "REJECT."]


def seeded_points(seed):
    rng = random.Random(seed)
    gold = [{"paper_id": (i if rng.random() < 0.3 else f"P{i}"), "decision": rng.choice(DECISIONS)}
            for i in range(1, 41)]
    gold += [dict(rng.choice(gold)) for _ in range(3)]  # repeated gold lines, same decision
    predictions = []
    for record in gold[:40]:
        roll = rng.random()
        if roll < 0.15:
            continue  # missing
        answer = rng.choice(POINT_ANSWERS)
        predictions.append({"id": record["paper_id"], "prediction": answer})
        if roll > 0.9:  # repeated, sometimes with another answer
            predictions.append({"id": record["paper_id"], "prediction": rng.choice([answer, "oral", "Reject"])})
    predictions.append({"id": "not-in-gold", "prediction": "oral"})
    rng.shuffle(predictions)
    return gold, predictions


def strict_points(gold, predictions):
    """Full-label accuracy: unique gold papers; right only with one readable answer across all copies."""
    truth = {}
    for record in gold:
        truth.setdefault(str(record["paper_id"]), innoeval.parse_decision(record["decision"]))
    copies = {}
    for item in predictions:
        copies.setdefault(str(item["id"]), []).append(innoeval.parse_decision(item["prediction"]))
    right = [len(set(copies.get(paper, []))) == 1 and copies[paper][0] == label for paper, label in truth.items()]
    return sum(right) / len(truth), len(truth)


@pytest.mark.parametrize("seed", SEEDS)
def test_points_reference_and_strict(seed):
    gold, predictions = seeded_points(seed)
    report = innoeval.score_points(gold, predictions)
    answers = first_copy(predictions)
    loaded = [record for record in gold if record.get("paper_id") or record.get("id")]  # load_dataset's filter
    processed = [(record, None if str(record["paper_id"]) not in answers else
                  {"final_decision": answers[str(record["paper_id"])]["prediction"]}) for record in loaded]
    expected = ref_evaluate_accuracy(processed)
    assert report.reference.metrics == {"accuracy": expected.pop("accuracy")}
    assert {key: report.reference.counts[key] for key in expected} == expected
    accuracy, n = strict_points(gold, predictions)
    assert (report.strict.metrics["full.accuracy"], report.strict.n) == (pytest.approx(accuracy, abs=0), n)
    assert report.reference.counts["dropped_missing"] > 0 and report.counts["missing"] > 0


# ============================================================================================ InnoEval groups
# zjunlp/InnoEval innoeval/pipeline/group_evaluation.py: parse_groups_from_dataset, validate_group_for_evaluation,
# RankingModule._parse_index_list, process_single_group (metrics), run_group_evaluation (aggregation)

LABEL_ORDER = ["oral", "spotlight", "poster", "reject"]


def ref_parse_groups(data):
    groups = []
    for entry in data:
        main = entry.get("paper_id") or entry.get("paperId") or entry.get("query", {}).get("paper_id")
        members = []
        for category, match in entry.get("matches", {}).items():
            pid = match.get("paper_internal_id") or match.get("paper_id") or match.get("id")
            label = match.get("category") or match.get("label") or match.get("tag") or category
            if pid:
                members.append({"paper_id": pid, "label": label})
        if len(members) != 3:
            continue
        groups.append({"main": {"paper_id": main, "label": None}, "members": members})
    return groups


def ref_parse_index_list(raw):
    if not raw:
        return [1, 2, 3, 4]
    seen, indices = set(), []
    for token in re.split(r"[,\s]+", raw.strip()):
        if not token:
            continue
        try:
            value = int(token)
        except ValueError:
            continue
        if 1 <= value <= 4 and value not in seen:
            seen.add(value)
            indices.append(value)
    return indices + [i for i in range(1, 5) if i not in seen]


def ref_lcs(a, b):
    dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            dp[i][j] = 1 + dp[i + 1][j + 1] if a[i] == b[j] else max(dp[i + 1][j], dp[i][j + 1])
    return dp[0][0]


def ref_process_group(group, judge):
    """One group; `judge(paper_ids_in_presented_order)` stands in for the two LLM modules (raising when the
    model call fails, as the modules do); any exception makes the group None, as process_single_group's try."""
    member_labels = [m.get("label", "").lower() for m in group["members"]]
    main_label = next((label for label in LABEL_ORDER if label not in member_labels), None)
    if main_label is None or any(label not in LABEL_ORDER for label in member_labels):
        return None
    labels = {group["main"]["paper_id"]: main_label} | {m["paper_id"]: m["label"].lower() for m in group["members"]}
    if len(set(labels.values())) != 4:
        return None
    ordered = sorted(labels, key=lambda pid: LABEL_ORDER.index(labels[pid]))
    try:
        comparison, ranking = judge(ordered)
        best = int(comparison.get("best_idea_index", 1))
    except Exception:  # noqa: BLE001 - the reference catches everything here
        return None
    index_list = ref_parse_index_list(str(ranking.get("index_list", "") or ""))
    return {"best_match": int(best == 1), "rank_match": int(index_list == [1, 2, 3, 4]),
            "lcs": ref_lcs(index_list, [1, 2, 3, 4]) / 4.0}


def ref_run_groups(data, judge_for):
    results = [ref_process_group(group, judge_for(group)) for group in ref_parse_groups(data)]
    done = [r for r in results if r is not None]
    if not done:
        raise RuntimeError("No groups were processed successfully.")
    return {"total_groups": len(done), "skipped_groups": len(results) - len(done),
            "best_acc": sum(r["best_match"] for r in done) / len(done),
            "rank_acc": sum(r["rank_match"] for r in done) / len(done),
            "rank_lcs": sum(r["lcs"] for r in done) / len(done)}


def assert_groups_block(block, expected):
    """The reference's printed numbers: its metrics, total_groups and skipped_groups."""
    assert block.metrics == {key: expected[key] for key in ("best_acc", "rank_acc", "rank_lcs")}
    assert (block.counts["evaluated"], block.counts["skipped_groups"]) == (expected["total_groups"],
                                                                           expected["skipped_groups"])


def seeded_groups(seed):
    rng = random.Random(seed)
    gold = []
    for g in range(24):
        tiers = rng.choice([["oral", "spotlight", "poster", "reject"]] * 4
                           + [["highlight", "oral", "poster", "reject"], ["oral", "highlight", "poster", "reject"]])
        ids = [f"g{g}-{t}" for t in tiers]
        query_tier = tiers[0]
        matches = {t: {"paper_internal_id": pid, "category": t} for t, pid in zip(tiers[1:], ids[1:])}
        if g % 9 == 8:
            matches.pop(tiers[-1])  # two matches: a three-paper group (strict), not read at all (reference)
        gold.append({"query": {"paper_id": ids[0], "decision": f"Accept ({query_tier.title()})"},
                     "query_category": query_tier, "matches": matches})
    gold.append(dict(gold[0]))  # the real groups file repeats a group
    predictions = []
    for record in gold[:24]:
        papers = [record["query"]["paper_id"]] + [m["paper_internal_id"] for m in record["matches"].values()]
        roll = rng.random()
        if roll < 0.15:
            continue
        ranking = rng.sample(papers, len(papers))
        item = {"id": record["query"]["paper_id"], "best": ranking[0], "ranking": ranking}
        if roll < 0.2:
            del item["best"]  # best from the ranking (strict) / the default (reference)
        elif roll < 0.25:
            item |= {"best": "", "ranking": rng.choice(["", []])}  # an empty answer
        elif roll < 0.35:
            item["ranking"] = ranking[:2] + ["nope"]  # malformed ranking
        elif roll < 0.4:
            item["best"] = "not-a-member"
        elif roll < 0.45:
            item["ranking"] = "g0-oral, g0-poster"  # wrong type
        predictions.append(item)
        if roll > 0.9:
            predictions.append(dict(item, best=rng.choice(papers)))
    return gold, predictions


def group_judge(predictions):
    answers = first_copy(predictions)

    def judge_for(group):
        main = group["main"]["paper_id"]

        def judge(ordered):
            item = answers.get(str(main))
            if item is None:
                raise RuntimeError("the model call failed")  # no prediction for this group
            comparison = {}
            if isinstance(item.get("best"), str) and not item["best"].strip():
                comparison["best_idea_index"] = item["best"]  # the model's empty answer, as the module passes it on
            elif item.get("best") is not None:  # an absent best is an absent attribute: the module's default
                best = str(item["best"])
                comparison["best_idea_index"] = ordered.index(best) + 1 if best in ordered else 0
            ranking = item.get("ranking")
            tokens = [str(ordered.index(p) + 1) if p in ordered else "x" for p in ranking] \
                if isinstance(ranking, list) else []
            return comparison, {"index_list": ", ".join(tokens)}
        return judge
    return judge_for


def strict_groups(gold, predictions):
    """Best accuracy over unique usable groups: highlight level with spotlight; missing/conflicting wrong."""
    tier = {"reject": 1, "poster": 2, "spotlight": 3, "highlight": 3, "oral": 4}
    groups = {}
    for record in gold:
        members = [(record["query"]["paper_id"], tier[record["query_category"]])] + \
                  [(m["paper_internal_id"], tier[m["category"]]) for m in record["matches"].values()]
        if len({t for _, t in members}) == len(members):
            groups[record["query"]["paper_id"]] = max(members, key=lambda m: m[1])[0]
    copies = {}
    for item in predictions:
        copies.setdefault(item["id"], []).append(repr((item.get("best"), item.get("ranking"))))
    hits = []
    for query, best in groups.items():
        found = [item for item in predictions if item["id"] == query]
        if not found or len(set(copies[query])) > 1:
            hits.append(0.0)
            continue
        chosen = found[0].get("best")
        if chosen is None and isinstance(found[0].get("ranking"), list) and found[0]["ranking"]:
            chosen = found[0]["ranking"][0]
        hits.append(float(chosen == best))
    return statistics.fmean(hits), len(groups)


@pytest.mark.parametrize("seed", SEEDS)
def test_groups_reference_and_strict(seed):
    gold, predictions = seeded_groups(seed)
    report = innoeval.score_groups(gold, predictions)
    assert_groups_block(report.reference, ref_run_groups(gold, group_judge(predictions)))
    accuracy, n = strict_groups(gold, predictions)
    assert (report.strict.metrics["best_accuracy"], report.strict.n) == (accuracy, n)


@pytest.mark.shared
def test_groups_reference_on_the_real_sample_file(innoeval_sample):
    gold = json.loads(innoeval_sample("conference_groups.sample.json").read_text(encoding="utf-8"))
    predictions = [{"id": g["query"]["paper_id"], "ranking": [m["paper_internal_id"] for m in g["matches"].values()]}
                   for g in gold]
    report = innoeval.score_groups(gold, predictions)
    assert_groups_block(report.reference, ref_run_groups(gold, group_judge(predictions)))


def four_tier_group(query):
    tiers = ["oral", "spotlight", "poster", "reject"]
    return {"query": {"paper_id": f"{query}-oral", "decision": "Accept (Oral)"}, "query_category": "oral",
            "matches": {t: {"paper_internal_id": f"{query}-{t}", "category": t} for t in tiers[1:]}}


def test_groups_reference_leaves_out_a_missing_row_and_fills_an_absent_answer():
    gold = [four_tier_group(q) for q in ("g1", "g2", "g3", "g4", "g5")]
    worst_first = ["g1-reject", "g1-poster", "g1-spotlight", "g1-oral"]
    predictions = [{"id": "g1-oral", "best": "g1-reject", "ranking": worst_first},  # answered, all wrong
                   {"id": "g2-oral", "ranking": []},  # best and ranking absent: the modules' defaults (gold)
                   {"id": "g3-oral", "best": "", "ranking": ""},  # empty best: int("") raises, left out
                   {"id": "g4-oral", "best": "g4-oral", "ranking": "g4-oral, g4-poster"}]  # g5: no row
    report = innoeval.score_groups(gold, predictions)
    expected = ref_run_groups(gold, group_judge(predictions))
    assert_groups_block(report.reference, expected)
    assert expected == {"total_groups": 3, "skipped_groups": 2, "best_acc": 2 / 3, "rank_acc": 2 / 3,
                        "rank_lcs": (0.25 + 2) / 3}
    assert report.reference.n == 3
    assert {key: report.reference.counts[key] for key in ("dropped_missing", "dropped_empty_best", "filled_best",
                                                          "filled_ranking")} == \
        {"dropped_missing": 1, "dropped_empty_best": 1, "filled_best": 1, "filled_ranking": 2}
    assert report.strict.n == 5 and report.strict.metrics["best_accuracy"] == 1 / 5  # strict: unchanged rule


# ============================================================================================= InnoEval pairs
# zjunlp/InnoEval innoeval/pipeline/pair_evaluation.py: get_decision_priority, determine_better_paper,
# PairComparisonModule.forward (answer normalisation), run_pair_evaluation (aggregation)


def ref_priority(decision):
    text = decision.lower()
    for word, value in (("oral", 4), ("spotlight", 3), ("poster", 2), ("reject", 1)):
        if word in text:
            return value
    return 0


def ref_better(decision_a, decision_b):
    a, b = ref_priority(decision_a), ref_priority(decision_b)
    return "A" if a > b else "B" if b > a else "A"


def ref_run_pairs(data, judge):
    total = correct = 0
    for entry in data:
        raw = judge(entry)
        if raw is None:
            continue  # a failed comparison
        predicted = "A" if (raw or "A").strip().upper() == "A" else "B"
        total += 1
        correct += predicted == ref_better(entry["paper_a"]["decision"], entry["paper_b"]["decision"])
    if total == 0:
        raise RuntimeError("No pairs were processed successfully.")
    return correct / total


def pair_judge(predictions):
    answers = {}
    for item in predictions:
        answers.setdefault(innoeval.pair_key(str(item["a"]), str(item["b"])), item)

    def judge(entry):
        a, b = str(entry["paper_a"]["paper_id"]), str(entry["paper_b"]["paper_id"])
        item = answers.get(innoeval.pair_key(a, b))
        if item is None:
            return None
        text = "" if item.get("prediction") is None else str(item["prediction"]).strip()
        text = text or "A"  # the module's own default for an empty answer, in the order the judge saw
        if text in (a, b):
            return "A" if text == a else "B"
        if str(item["a"]) == a:
            return text  # presented as in the gold: the judge's raw answer
        return "B" if text.upper() == "A" else "A"  # presented swapped: the judge's A is the gold's B
    return judge


def seeded_pairs(seed):
    rng = random.Random(seed)
    gold = []
    for i in range(40):
        da, db = rng.choice(DECISIONS), rng.choice(DECISIONS)
        gold.append({"group_id": "g", "difficulty": rng.choice(["easy", "difficult"]),
                     "paper_a": {"paper_id": f"a{i}", "decision": da}, "paper_b": {"paper_id": f"b{i}",
                                                                                   "decision": db}})
    gold.append(dict(gold[3]))
    predictions = []
    for record in gold[:40]:
        roll = rng.random()
        if roll < 0.15:
            continue
        a, b = record["paper_a"]["paper_id"], record["paper_b"]["paper_id"]
        if rng.random() < 0.4:
            a, b = b, a  # swapped presentation
        answer = rng.choice(["A", "B", " a ", "(A)", "tie", "", 0, a, b, "Idea B"])
        predictions.append({"a": a, "b": b, "prediction": answer})
        if roll > 0.9:
            predictions.append({"a": a, "b": b, "prediction": rng.choice(["A", "B"])})
    return gold, predictions


@pytest.mark.parametrize("seed", SEEDS)
def test_pairs_reference_and_strict(seed):
    gold, predictions = seeded_pairs(seed)
    report = innoeval.score_pairs(gold, predictions)
    assert report.reference.metrics["accuracy"] == ref_run_pairs(gold, pair_judge(predictions))
    for level, name in (("easy", "easy"), ("hard", "difficult")):  # the reference runs each file on its own
        subset = [entry for entry in gold if entry["difficulty"] == name]
        assert report.reference.metrics[f"accuracy.{level}"] == ref_run_pairs(subset, pair_judge(predictions))
    # strict: unique untied gold pairs in the denominator; missing, invalid and conflicting copies wrong
    tier = {"reject": 1, "poster": 2, "spotlight": 3, "highlight": 3, "oral": 4}
    winners = {}
    for entry in gold:
        ta, tb = (tier[innoeval.parse_decision(entry[s]["decision"])] for s in ("paper_a", "paper_b"))
        if ta != tb:
            winners[innoeval.pair_key(entry["paper_a"]["paper_id"], entry["paper_b"]["paper_id"])] = \
                entry["paper_a"]["paper_id"] if ta > tb else entry["paper_b"]["paper_id"]
    choices = {}
    for item in predictions:
        choices.setdefault(innoeval.pair_key(item["a"], item["b"]), set()).add(
            innoeval.read_pair_choice(item, item["a"], item["b"]))
    right = [len(choices.get(key, ())) == 1 and next(iter(choices[key])) == winner for key, winner in winners.items()]
    assert (report.strict.metrics["accuracy"], report.strict.n) == (statistics.fmean(right), len(winners))


# ===================================================================================================== SIQA
# commusim/SIQA-Eval eval/eval_pipeline.py at ce6e7f9: evaluate_SIQA_U, evaluate_SIQA_S (over the merged prediction
# file); the SIQA-U weighting of 97281e2 (and of the SIQA Competition leaderboard) beside it

MODEL = "The_Best_IQA"


def ref_siqa_u(predicted_data, model_name):
    correct = {"yes-or-no": 0, "what": 0, "how": 0}
    total = {"yes-or-no": 0, "what": 0, "how": 0}
    for item in predicted_data:
        kind = item.get("type", "").strip().lower()
        if kind not in total:
            continue
        truth = item["answer"].strip().upper()
        predicted = item.get(model_name, "").strip().upper()
        total[kind] += 1
        correct[kind] += truth == predicted
    accuracy = {kind: correct[kind] / total[kind] if total[kind] > 0 else 0.0 for kind in total}
    valid = [value for kind, value in accuracy.items() if total[kind] > 0]
    return {"ACC_yes-or-no": accuracy["yes-or-no"], "ACC_what": accuracy["what"], "ACC_how": accuracy["how"],
            "SIQA_U_Score": sum(valid) / len(valid) if valid else 0.0}


def ref_siqa_u_weighted(accuracy):
    """The SIQA-U score of 97281e2 and of the leaderboard, from the per-type accuracies."""
    return 0.2 * accuracy["ACC_yes-or-no"] + 0.3 * accuracy["ACC_what"] + 0.5 * accuracy["ACC_how"]


def ref_siqa_s(predicted_data, model_name):
    gp, pp, gk, pk = [], [], [], []
    for item in predicted_data:
        gt_p, gt_k = item.get("perception_rating"), item.get("knowledge_rating")
        prediction = item.get(model_name, {})
        pred_p, pred_k = prediction.get("perception"), prediction.get("knowledge")
        if all(v is not None for v in (gt_p, gt_k, pred_p, pred_k)):
            gp.append(gt_p), pp.append(pred_p), gk.append(gt_k), pk.append(pred_k)
    if not gp:
        return {"SIQA_S_Score": 0.0, "Perceptual_Score": 0.0, "Factual_Score": 0.0}
    srcc_p, _ = spearmanr(gp, pp)
    plcc_p, _ = pearsonr(gp, pp)
    srcc_k, _ = spearmanr(gk, pk)
    plcc_k, _ = pearsonr(gk, pk)
    score_p, score_k = max((srcc_p + plcc_p) / 2, 0) * 100, max((srcc_k + plcc_k) / 2, 0) * 100
    return {"Perceptual_SRCC": float(srcc_p), "Perceptual_PLCC": float(plcc_p), "Perceptual_Score": score_p,
            "Knowledge_SRCC": float(srcc_k), "Knowledge_PLCC": float(plcc_k), "Factual_Score": score_k,
            "SIQA_S_Score": (score_p + score_k) / 2}


def ref_level(logits):
    """What the reference's score head holds for five logits: the softmax expectation, nan propagating."""
    if not isinstance(logits, list) or len(logits) != 5 or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in logits):
        return None
    z = np.asarray(logits, dtype=float)
    with np.errstate(invalid="ignore"):
        e = np.exp(z - z.max())
        return float((e / e.sum()) @ np.arange(1, 6))


def seeded_siqa_u(seed):
    rng = random.Random(seed)
    gold = []
    for i in range(45):
        n_choices = rng.choice([2, 4])
        gold.append({"id": i if rng.random() < 0.3 else f"q{i}", "answer": rng.choice("AB" if n_choices == 2
                                                                                       else "ABCD"),
                     "type": rng.choice(["yes-or-no", "what", "how", "Yes/No", " How", "YES-OR-NO", None]),
                     "choices": [f"c{k}" for k in range(n_choices)]})
    predictions = []
    for record in gold:
        roll = rng.random()
        if roll < 0.15:
            continue
        answer = rng.choice(["A", "B", "C", "D", " b ", "(A)", "Answer: B.", "A and C", "", 2, None])
        predictions.append({"id": record["id"], "prediction": answer})
        if roll > 0.9:
            predictions.append({"id": record["id"], "prediction": rng.choice(["A", "B"])})
    predictions.append({"id": "zz", "prediction": "A"})
    return gold, predictions


@pytest.mark.parametrize("seed", SEEDS)
def test_siqa_u_reference_and_strict(seed):
    gold, predictions = seeded_siqa_u(seed)
    report = siqa.score_understanding(gold, predictions)
    answers = first_copy(predictions)
    merged = []
    for record in gold:
        item = {"answer": record["answer"], "type": record["type"] if isinstance(record["type"], str) else ""}
        if str(record["id"]) in answers:
            value = answers[str(record["id"])]["prediction"]
            item[MODEL] = "" if value is None else str(value)
        merged.append(item)
    expected = ref_siqa_u(merged, MODEL)
    expected["SIQA_U_Score_weighted"] = ref_siqa_u_weighted(expected)
    assert_same_numbers(report.reference.metrics, expected)
    # strict: every gold item; a choice outside the item's own choices is wrong
    copies = {}
    for item in predictions:
        copies.setdefault(str(item["id"]), set()).add(parse_choice(item["prediction"]))
    right = []
    for record in gold:
        found = copies.get(str(record["id"]), set())
        choice = next(iter(found)) if len(found) == 1 else None
        allowed = "ABCD"[: len(record["choices"])]
        right.append(choice is not None and choice in allowed and choice == record["answer"])
    assert report.strict.metrics["accuracy"] == statistics.fmean(right) and report.strict.n == len(gold)


def seeded_siqa_s(seed):
    rng = random.Random(seed)
    gold = [{"id": f"s{i}", "perception": round(rng.uniform(1, 5), 2), "knowledge": round(rng.uniform(1, 5), 2)}
            for i in range(30)]
    gold[2].pop("knowledge")  # an item missing one gold dimension
    predictions = []
    for record in gold:
        roll = rng.random()
        if roll < 0.15:
            continue
        item = {"id": record["id"], "perception": [rng.uniform(-2, 2) for _ in range(5)],
                "knowledge": [rng.randint(-3, 3) for _ in range(5)]}  # integer logits are numbers too
        if roll < 0.25:
            item["knowledge"] = [1, 2, 3]  # malformed
        elif roll < 0.3:
            item["perception"] = ["1", "2", "3", "4", "5"]  # strings for numbers
        elif roll < 0.33 and seed % 2:
            item["perception"][rng.randrange(5)] = rng.choice([float("nan"), float("inf"), float("-inf")])
        predictions.append(item)
        if roll > 0.9:
            predictions.append(dict(item, perception=[0, 0, 0, 0, 9]))
    return gold, predictions


@pytest.mark.parametrize("seed", SEEDS)
def test_siqa_s_reference_and_strict(seed):
    gold, predictions = seeded_siqa_s(seed)
    report = siqa.score_scoring(gold, predictions)
    answers = first_copy(predictions)
    merged = []
    for record in gold:
        item = {"perception_rating": record.get("perception"), "knowledge_rating": record.get("knowledge")}
        if record["id"] in answers:
            item[MODEL] = {d: ref_level(answers[record["id"]].get(d)) for d in ("perception", "knowledge")}
        merged.append(item)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = none_for_nan(ref_siqa_s(merged, MODEL))
    assert_same_numbers(report.reference.metrics, expected)
    # strict: SRCC over the items with one consistent, valid prediction (the correlation cannot count misses)
    copies = {}
    for item in predictions:
        copies.setdefault(item["id"], []).append(item)
    pairs = []
    for record in gold:
        found = copies.get(record["id"], [])
        if len({repr([c.get("perception"), c.get("knowledge")]) for c in found}) != 1:
            continue
        level = expected_level(found[0]["perception"])
        if level is not None:
            pairs.append((record["perception"], level))
    assert report.strict.metrics["perception.srcc"] == pytest.approx(
        spearmanr([t for t, _ in pairs], [p for _, p in pairs]).statistic, abs=1e-12)
    assert report.counts["perception.n_scored"] == len(pairs)


def test_siqa_u_reference_score_is_the_mean_of_the_type_accuracies():
    kinds = ["yes-or-no", "yes-or-no", "what", "how", "how", "how", "how", "Yes/No"]
    gold = [{"id": f"q{i}", "answer": "A", "type": kind} for i, kind in enumerate(kinds)]
    answers = ["A", "B", "A", "A", "B", "B", "B", "A"]
    report = siqa.score_understanding(gold, [{"id": f"q{i}", "prediction": a} for i, a in enumerate(answers)])
    block = report.reference
    assert block.metrics == {"ACC_yes-or-no": 0.5, "ACC_what": 1.0, "ACC_how": 0.25,
                             "SIQA_U_Score": (0.5 + 1.0 + 0.25) / 3,
                             "SIQA_U_Score_weighted": 0.2 * 0.5 + 0.3 * 1.0 + 0.5 * 0.25}
    assert block.counts["skipped_untyped"] == 1 and block.n == 7  # "Yes/No" is not a type of the reference
    assert "commusim/SIQA-Eval@ce6e7f9f2744ed91a51a663ec082d6b1c3d4922d" in block.source
    # a type without questions is left out of the mean (and still printed as 0.0)
    only_how = siqa.score_understanding(gold[3:7], [{"id": f"q{i}", "prediction": "A"} for i in range(3, 7)])
    assert only_how.reference.metrics["SIQA_U_Score"] == 1.0 and only_how.reference.metrics["ACC_what"] == 0.0
    assert report.strict.metrics["accuracy"] == 4 / 8  # strict: unchanged


def test_siqa_s_reference_keeps_an_item_with_a_nan_level_and_prints_null():
    rng = random.Random(7)
    gold = [{"id": f"s{i}", "perception": float(i % 5 + 1), "knowledge": rng.uniform(1, 5)} for i in range(20)]
    predictions = [{"id": record["id"], "perception": [rng.uniform(-2, 2) for _ in range(5)],
                    "knowledge": [rng.uniform(-2, 2) for _ in range(5)]} for record in gold]
    predictions[3]["perception"][2] = float("nan")
    report = siqa.score_scoring(gold, predictions)
    block = report.reference
    assert block.n == 20 and block.counts["nan_level_kept.perception"] == 1 and block.counts["dropped_incomplete"] == 0
    assert {key: block.metrics[key] for key in ("Perceptual_SRCC", "Perceptual_PLCC", "Perceptual_Score",
                                                "SIQA_S_Score")} == dict.fromkeys(
        ("Perceptual_SRCC", "Perceptual_PLCC", "Perceptual_Score", "SIQA_S_Score"))
    knowledge = [ref_level(item["knowledge"]) for item in predictions]  # all 20 items, the nan one included
    truth = [record["knowledge"] for record in gold]
    assert block.metrics["Knowledge_SRCC"] == pytest.approx(spearmanr(truth, knowledge)[0], rel=1e-9, abs=0)
    assert block.metrics["Knowledge_PLCC"] == pytest.approx(pearsonr(truth, knowledge)[0], rel=1e-9, abs=0)
    # strict: unchanged, the item is invalid in perception only
    assert report.counts["perception.n_scored"] == 19 and report.counts["knowledge.n_scored"] == 20
    assert report.strict.metrics["score"] is not None


# ================================================================================================= ReviewMT
# chengtan9907/ReviewMT src/module/metric_module.py: process_files (the score, decision and hit-rate parts)


def ref_process_files(files, total):
    mae, gt_decisions, pr_decisions = [], [], []
    missed = missed_reviews = total_reviews = missed_decisions = total_decisions = 0
    for data in files:
        if data is None:
            continue  # not a file
        roles, gts, prs = data.get("roles", []), data.get("gt_replies", []), data.get("pred_replies", [])
        if len(gts) == 0 or len(prs) == 0:
            missed += 1
            continue
        for role, gt_reply, pr_reply in zip(roles, gts, prs):
            gt_reply, pr_reply = gt_reply.lower(), pr_reply.lower()
            if role == "reviewer":
                total_reviews += 1
                try:
                    gt_score = int(re.findall(r"score: (\d+)", gt_reply)[0])
                except IndexError:
                    continue
                try:
                    pr_score = int(re.findall(r"\d+", re.findall(r"score: .{0,10}", pr_reply)[0])[0])
                    assert 1 <= pr_score <= 10
                    mae.append(np.abs(gt_score - pr_score))
                except (IndexError, AssertionError):
                    missed_reviews += 1
            if role == "decision maker":
                total_decisions += 1
                gt = 1 if re.search(r"final decision: (\w+)", gt_reply).group(1) == "accept" else 0
                accepts = len(re.findall(r"accept", pr_reply, re.IGNORECASE))
                rejects = len(re.findall(r"reject", pr_reply, re.IGNORECASE))
                if accepts == rejects:
                    missed_decisions += 1
                else:
                    gt_decisions.append(gt)
                    pr_decisions.append(1 if accepts > rejects else 0)
    return {"paper_hit_rate": (total - missed) / total,
            "review_hit_rate": (total_reviews - missed_reviews) / total_reviews,
            "decision_hit_rate": (total_decisions - missed_decisions) / total_decisions,
            "review_mae_mean": np.mean(mae), "review_mae_std": np.std(mae),
            "decision_f1": f1_score(gt_decisions, pr_decisions)}


REVIEWS = ["Summary ... Score: 6", "score: 8/10, strong", "Rating: 3", "score: 11", "Overall, score: about 7",
           "no score here", {"text": "Score: 5"}, 7, "SCORE: 2"]
PAPER_DECISIONS = ["Accept", "reject", "We recommend acceptance", "not accepted", "accept or reject", "", None, 1]


def seeded_reviewmt(seed):
    rng = random.Random(seed)
    gold = [{"id": f"r{i}", "decision": rng.choice(["accept", "reject", "Accept (Poster)"]),
             "scores": [rng.randint(1, 10) for _ in range(rng.randint(1, 4))]} for i in range(30)]
    predictions = []
    for record in gold:
        roll = rng.random()
        if roll < 0.15:
            continue
        item = {"id": record["id"], "summary": rng.choice(["a summary", "", None]),
                "reviews": [rng.choice(REVIEWS) for _ in range(rng.randint(0, 5))],
                "decision": rng.choice(PAPER_DECISIONS)}
        if roll < 0.2:
            item["reviews"] = "one review as a string"  # wrong type: no reviews, counted
        elif roll < 0.25:
            item.pop("decision")
        elif roll < 0.28:
            item = {"id": record["id"], "reviews": []}  # nothing generated
        predictions.append(item)
        if roll > 0.92:
            predictions.append(dict(item, decision="reject"))
    return gold, predictions


def review_transcript(record, item):
    """The conversation file the reference reads, for one paper: the reviews as far as the shorter list goes, then
    the decision maker's turn, which every conversation has; a record without a decision (absent, null, "", an
    empty CSV cell) is the model's empty reply to it."""
    if item is None:
        return None
    reviews = item.get("reviews") if isinstance(item.get("reviews"), list) else []
    shown = min(len(reviews), len(record["scores"]))
    text = [r.get("text") if isinstance(r, dict) else r for r in reviews]
    decision = reviewmt.parse_decision(record["decision"]) or reviewmt.parse_decision(
        f"decision: {record['decision']}")
    roles = ["reviewer"] * shown + ["decision maker"]
    gts = [f"review ... score: {score}" for score in record["scores"][:shown]] + [f"final decision: {decision}"]
    reply = item.get("decision")
    prs = [str(t) for t in text[:shown]] + ["" if reply is None else str(reply)]
    return {"roles": roles, "gt_replies": gts, "pred_replies": prs}


@pytest.mark.parametrize("seed", SEEDS)
def test_reviewmt_reference_and_strict(seed):
    gold, predictions = seeded_reviewmt(seed)
    report = reviewmt.score_reviews(gold, predictions)
    answers = first_copy(predictions)
    files = [review_transcript(record, answers.get(record["id"])) for record in gold]
    expected = ref_process_files(files, total=len(gold))
    assert report.reference.metrics == none_for_nan({k: float(v) for k, v in expected.items()})
    # strict: MAE of each parsed review against its own reviewer's score, over unique consistent predictions
    copies = {}
    for item in predictions:
        copies.setdefault(item["id"], []).append(item)
    errors, decided = [], []
    for record in gold:
        found = copies.get(record["id"], [])
        same = len({repr((c.get("summary"), c.get("reviews"), c.get("decision"))) for c in found}) == 1
        truth = reviewmt.parse_decision(record["decision"]) or reviewmt.parse_decision(
            f"decision: {record['decision']}")
        decided.append(same and reviewmt.parse_decision(found[0].get("decision")) == truth)
        if not same or not isinstance(found[0].get("reviews"), list):
            continue
        for position, review in enumerate(found[0]["reviews"]):
            score = reviewmt.parse_score(review.get("text") if isinstance(review, dict) else review)
            if score is not None and position < len(record["scores"]):
                errors.append(abs(score - record["scores"][position]))
    assert report.strict.metrics["score_mae"] == pytest.approx(statistics.fmean(errors), abs=1e-12)
    assert report.strict.metrics["decision.accuracy"] == statistics.fmean(decided)
    assert report.counts["invalid_reviews"] == sum(1 for p in first_copy(predictions).values()
                                                   if isinstance(p.get("reviews"), str))


def test_reviewmt_reference_reads_an_empty_decision_as_a_reply_in_csv_and_jsonl(tmp_path, write_jsonl):
    gold = [{"id": f"r{i}", "decision": "accept" if i % 2 else "reject", "scores": [5]} for i in range(20)]
    rows = [{"id": f"r{i}", "summary": "s", "decision": "accept" if i % 2 else "reject"} for i in range(20)]
    for i in (3, 8, 12):
        rows[i]["decision"] = ""  # the model's empty reply; r3 has no other output either
    rows[3]["summary"] = ""
    gold_path = write_jsonl(tmp_path / "gold.jsonl", gold)
    csv_path = tmp_path / "pred.csv"
    csv_path.write_text("id,summary,decision\n" + "".join(f"{r['id']},{r['summary']},{r['decision']}\n"
                                                           for r in rows), encoding="utf-8")
    blocks = []
    for path in (csv_path, write_jsonl(tmp_path / "pred.jsonl", rows)):
        result = CliRunner().invoke(cli_app, ["metrics", "reviewmt", "--gold", str(gold_path), "--pred", str(path),
                                              "--json"])
        assert result.exit_code == 0, result.output
        blocks.append(json.loads(result.stdout)["reference"])
    assert blocks[0]["metrics"] == blocks[1]["metrics"]
    # With no review turn at all the reference's review_hit_rate divides by zero (None here), so its paper and
    # decision rates are checked on the same transcripts with one scored review added to every paper.
    files = [review_transcript(record, dict(row, reviews=["score: 5"])) for record, row in zip(gold, rows)]
    expected = ref_process_files(files, total=len(gold))
    assert blocks[0]["metrics"]["review_hit_rate"] is None
    assert blocks[0]["metrics"]["paper_hit_rate"] == expected["paper_hit_rate"] == 1.0
    assert blocks[0]["metrics"]["decision_hit_rate"] == expected["decision_hit_rate"] == 17 / 20
    assert blocks[0]["counts"]["empty_decisions"] == 3 and blocks[0]["counts"]["total_decisions"] == 20
    assert "chengtan9907/ReviewMT@586e27bbdcd7459a001e38ead52b18a6af801664" in blocks[0]["source"]


MESSY_LAYOUTS = ["jsonl", "jsonl-bom-crlf", "array-one-line", "array-pretty", "csv"]


def messy_reviewmt_answers():
    """Twenty papers' answers as a generator gives them, a failed paper (every answer null) among them."""
    rng = random.Random(28)
    gold = [{"id": f"r{i}", "decision": rng.choice(["accept", "reject"]),
             "scores": [rng.randint(1, 10) for _ in range(rng.randint(1, 3))]} for i in range(20)]
    answers = [{"id": record["id"], "summary": rng.choice(["a summary", ""]),
                "reviews": [rng.choice(REVIEWS[:6]) for _ in range(rng.randint(1, 3))],
                "decision": rng.choice(["Accept", "Reject", "We recommend acceptance", "accept or reject", ""])}
               for record in gold]
    answers[5] = {"id": "r5", "summary": None, "reviews": None, "decision": None}  # the failed paper
    answers[9]["decision"] = None  # reviews written, no decision
    return gold, answers


def write_messy(path, layout, answers):
    """A prediction file as tools write it: null fields left out of JSON (an empty cell in CSV), three papers
    missing, ids from another set and exact repeats added, a BOM and CRLF line ends or one line of JSON."""
    rows = [{key: value for key, value in item.items() if value is not None} for item in answers]
    rows = [row for row in rows if row["id"] not in {"r2", "r11", "r17"}]
    rows += [dict(rows[3]), {"id": "x1", "decision": "accept"}, dict(rows[0]), {"id": "x2"}]
    if layout == "csv":
        text = "id,summary,decision\n" + "".join(
            f"{row['id']},{row.get('summary', '')},{row.get('decision', '')}\n" for row in rows)
    elif layout.startswith("array"):
        text = json.dumps(rows, indent=2 if layout == "array-pretty" else None)
    else:
        text = "".join(json.dumps(row) + "\n" for row in rows)
    if layout == "jsonl-bom-crlf":
        text = "\ufeff" + text.replace("\n", "\r\n")
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("layout", MESSY_LAYOUTS)
def test_reviewmt_reference_equals_the_reference_code_on_messy_files(tmp_path, write_jsonl, layout):
    gold, answers = messy_reviewmt_answers()
    gold_path = write_jsonl(tmp_path / "gold.jsonl", gold)
    path = write_messy(tmp_path / f"pred.{'csv' if layout == 'csv' else 'json'}", layout, answers)
    result = CliRunner().invoke(cli_app, ["metrics", "reviewmt", "--gold", str(gold_path), "--pred", str(path),
                                          "--json"])
    assert result.exit_code == 0, result.output
    block = json.loads(result.stdout)["reference"]
    # The reference reads one conversation file per paper the model answered: the file's papers, first copy.
    written = {item["id"]: item for item in answers if item["id"] not in {"r2", "r11", "r17"}}
    if layout == "csv":  # a CSV row holds no list of reviews: no review turn, so the reference's review rates
        # divide by zero (None here); its paper and decision rows are checked with one scored review per paper
        assert block["metrics"]["review_hit_rate"] is None and block["metrics"]["review_mae_mean"] is None
        written = {key: dict(item, reviews=["score: 5"]) for key, item in written.items()}
    expected = none_for_nan({key: float(value) for key, value in ref_process_files(
        [review_transcript(record, written.get(record["id"])) for record in gold], total=len(gold)).items()})
    rows = ["paper_hit_rate", "decision_hit_rate", "decision_f1"] if layout == "csv" else list(expected)
    assert {row: block["metrics"][row] for row in rows} == {row: expected[row] for row in rows}
    assert block["metrics"]["paper_hit_rate"] == 1.0  # r5 answered nothing, yet the reference has its file
    assert block["counts"]["total_decisions"] == 17 and block["counts"]["skipped_without_prediction"] == 3


# ================================================================================================= novelty
# noy-sternlicht/novelty-eval src/novelty_eval/metrics.py: calculate_pairwise_accuracy, compute_pointwise_metrics;
# src/novelty_eval/analysis/stats_one_pass.py: _run_bootstrap_multi, _pairwise_all_statistic


def ref_pairwise_accuracy(results, inputs):
    correct = correct_with_ties = correct_strict = 0.0
    total = ties = 0
    for problem, result in results.items():
        if problem not in inputs or "expected_winners" not in inputs[problem]:
            continue
        for comparison in result.get("comparisons", []):
            winner, gt_winner = comparison.get("winner"), comparison.get("gt_winner")
            if gt_winner is None:
                continue
            total += 1
            if int(winner) == 2:
                ties += 1
                correct_with_ties += 0.5
            elif gt_winner == winner:
                correct += 1
                correct_with_ties += 1
                correct_strict += 1
    return {"accuracy_with_ties": correct_with_ties / total if total else 0.0,
            "accuracy_strict": correct_strict / total if total else 0.0,
            "accuracy_without_ties": correct / (total - ties) if total - ties > 0 else 0.0}


def ref_pointwise(results):
    tp = tn = fp = fn = 0
    for result in results.values():
        if result.get("prediction") is None or result.get("label") is None:
            continue
        positive, predicted = result["label"] == "POSITIVE", int(result["prediction"]) == 1
        tp += positive and predicted
        fn += positive and not predicted
        fp += not positive and predicted
        tn += not positive and not predicted
    total = tp + tn + fp + fn
    p_pos = tp / (tp + fp) if tp + fp else 0.0
    r_pos = tp / (tp + fn) if tp + fn else 0.0
    p_neg = tn / (tn + fn) if tn + fn else 0.0
    r_neg = tn / (tn + fp) if tn + fp else 0.0
    f1_pos = 2 * p_pos * r_pos / (p_pos + r_pos) if p_pos + r_pos else 0.0
    f1_neg = 2 * p_neg * r_neg / (p_neg + r_neg) if p_neg + r_neg else 0.0
    return {"accuracy": (tp + tn) / total if total else 0.0, "f1_macro": (f1_pos + f1_neg) / 2, "f1_pos": f1_pos,
            "f1_neg": f1_neg, "precision_pos": p_pos, "precision_neg": p_neg, "recall_pos": r_pos,
            "recall_neg": r_neg}


def ref_pairwise_bootstrap(base, ablation, n_resamples, random_state):
    def statistic(base_correct, base_tie, abl_correct, abl_tie):
        d_acc = np.mean(abl_correct + 0.5 * abl_tie) - np.mean(base_correct + 0.5 * base_tie)
        d_strict = np.mean(abl_correct) - np.mean(base_correct)
        base_nt, abl_nt = base_correct[base_tie < 0.5], abl_correct[abl_tie < 0.5]
        b = float(np.mean(base_nt)) if len(base_nt) else 0.0
        a = float(np.mean(abl_nt)) if len(abl_nt) else 0.0
        return np.array([d_acc, d_strict, a - b])

    base_arr, abl_arr = np.array(base, dtype=float), np.array(ablation, dtype=float)
    result = bootstrap((base_arr[:, 0], base_arr[:, 1], abl_arr[:, 0], abl_arr[:, 1]), statistic, paired=True,
                       vectorized=False, n_resamples=n_resamples, random_state=np.random.default_rng(random_state))
    return float(result.confidence_interval.low[0]), float(result.confidence_interval.high[0])


def seeded_novelty_pairs(seed, n=36):
    rng = random.Random(seed)
    gold = [{"id": i if i % 3 == 0 else f"n{i}", "a": f"x{i}", "b": i * 100 + 7,
             "label": rng.choice(["A", "B"])} for i in range(1, n + 1)]

    def run():
        rows = []
        for record in gold:
            roll = rng.random()
            if roll < 0.12:
                continue
            item = {"id": record["id"], "prediction": rng.choice(["A", "B", "tie", "maybe", 0, 1, 2, 7,
                                                                  record["b"], str(record["a"]), None])}
            if rng.random() < 0.3:
                item |= {"a": record["b"], "b": record["a"]}  # swapped presentation
            rows.append(item)
            if roll > 0.92:
                rows.append(dict(item, prediction=rng.choice(["A", "B"])))
        rows.append({"id": "zz", "prediction": "A"})
        return rows
    return gold, run(), run()


def comparison_codes(gold, predictions):
    """The reference's comparisons: winner 0 (A), 1 (B), 2 (tie or unparsable), per gold pair with an answer."""
    pairs = read_pairwise_gold(gold)
    answers = first_copy(predictions)
    results, inputs = {}, {}
    for key, pair in pairs.items():
        inputs[key] = {"expected_winners": [pair.winner]}
        if key not in answers:
            continue
        verdict = read_verdict(answers[key], pair)
        code = 2 if verdict in (None, TIE) else pair.ideas.index(verdict)
        results[key] = {"comparisons": [{"winner": code, "gt_winner": pair.ideas.index(pair.winner)}]}
    return results, inputs


@pytest.mark.parametrize("seed", SEEDS)
def test_novelty_pairwise_reference_and_strict(seed):
    gold, predictions, _ = seeded_novelty_pairs(seed)
    report = novelty.score_pairwise(gold, predictions)
    assert report.reference.metrics == ref_pairwise_accuracy(*comparison_codes(gold, predictions))
    pairs = read_pairwise_gold(gold)
    credit = []
    for key, pair in pairs.items():
        found = [item for item in predictions if str(item["id"]) == key]
        copies = {repr((item.get("a"), item.get("b"), item.get("prediction"))) for item in found}
        verdict = read_verdict(found[0], pair) if len(copies) == 1 else None  # none, or conflicting copies
        credit.append(1.0 if verdict == pair.winner else 0.5 if verdict == TIE else 0.0)
    assert (report.strict.metrics["accuracy"], report.strict.n) == (pytest.approx(statistics.fmean(credit),
                                                                                  abs=1e-15), len(pairs))


@pytest.mark.parametrize("seed", SEEDS)
def test_novelty_pointwise_reference_and_strict(seed):
    rng = random.Random(seed)
    gold = [{"id": i, "label": rng.choice(["novel", "not novel", 1, 0])} for i in range(1, 41)]
    predictions = [{"id": record["id"], "prediction": rng.choice([1, 0, "novel", "Not novel", "yes", True, "2",
                                                                   3, None, "unsure"])}
                   for record in gold if rng.random() > 0.15]
    predictions += [dict(predictions[0], prediction=1 - 0), {"id": 999, "prediction": 1}]
    report = novelty.score_pointwise(gold, predictions)
    answers = first_copy(predictions)
    results = {}
    for record in gold:
        if str(record["id"]) in answers:
            parsed = novelty.parse_novelty(answers[str(record["id"])]["prediction"])
            results[record["id"]] = {"prediction": None if parsed is None else int(parsed == "novel"),
                                     "label": "POSITIVE" if novelty.parse_novelty(record["label"]) == "novel"
                                     else "NEGATIVE"}
    assert report.reference.metrics == ref_pointwise(results)
    copies = {}
    for item in predictions:
        copies.setdefault(str(item["id"]), set()).add(novelty.parse_novelty(item["prediction"]))
    right = [len(copies.get(str(r["id"]), ())) == 1 and next(iter(copies[str(r["id"])])) ==
             novelty.parse_novelty(r["label"]) for r in gold]
    assert report.strict.metrics["accuracy"] == statistics.fmean(right)


@pytest.mark.parametrize("seed", range(3))
def test_novelty_audit_reference_bca_and_strict(seed):
    gold, before, after = seeded_novelty_pairs(seed, n=60)
    report = novelty.audit_pairwise(gold, before, predictions_after=after, n_boot=400, seed=seed)
    pairs = read_pairwise_gold(gold)
    results_before, _ = comparison_codes(gold, before)
    results_after, _ = comparison_codes(gold, after)
    common = [key for key in pairs if key in results_before and key in results_after]

    def rows(results):
        out = []
        for key in common:
            comparison = results[key]["comparisons"][0]
            tie = comparison["winner"] == 2
            out.append((float(not tie and comparison["winner"] == comparison["gt_winner"]), float(tie),
                        comparison["gt_winner"]))
        return out
    low, high = ref_pairwise_bootstrap(rows(results_before), rows(results_after), n_resamples=400,
                                       random_state=seed)
    assert (report.reference.metrics["delta_accuracy_with_ties.ci_low"],
            report.reference.metrics["delta_accuracy_with_ties.ci_high"]) == (low, high)
    assert report.reference.metrics["before.accuracy_with_ties"] == ref_pairwise_accuracy(
        {k: results_before[k] for k in common}, {k: {"expected_winners": []} for k in common})["accuracy_with_ties"]
    assert report.reference.n == len(common)
    # strict: the percentile interval of a paired bootstrap over every gold pair (missing and invalid are 0)
    scores = {name: novelty.read_pairwise_run(pairs, run, source=name).scores(pairs)
              for name, run in (("before", before), ("after", after))}
    draws = np.random.default_rng(seed).integers(0, len(pairs), size=(400, len(pairs)))
    means = (scores["after"] - scores["before"])[draws].mean(axis=1)
    assert report.strict.metrics["accuracy_difference.ci95_low"] == pytest.approx(np.percentile(means, 2.5),
                                                                                  abs=1e-15)
    assert report.strict.metrics["accuracy_difference.ci95_high"] == pytest.approx(np.percentile(means, 97.5),
                                                                                   abs=1e-15)


def test_every_reference_block_names_the_commit_it_reproduces():
    runs = [innoeval.score_points(*seeded_points(0)), innoeval.score_groups(*seeded_groups(0)),
            innoeval.score_pairs(*seeded_pairs(0)), siqa.score_understanding(*seeded_siqa_u(0)),
            siqa.score_scoring(*seeded_siqa_s(0)), reviewmt.score_reviews(*seeded_reviewmt(0))]
    gold, before, after = seeded_novelty_pairs(0)
    runs += [novelty.score_pairwise(gold, before), novelty.audit_pairwise(gold, before, predictions_after=after,
                                                                          n_boot=50)]
    for report in runs:
        assert re.match(r"[\w.-]+/[\w.-]+@[0-9a-f]{40} \S+\.py ", report.reference.source), report.reference.source
