"""InnoEval (arXiv 2602.14367): points (decision), groups (best selection and ranking), pairs (which is better)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import factorial
from statistics import fmean
from typing import Any

from service.metrics.classification import accuracy_and_macro_f1, confusion
from service.metrics.parsing import MetricsInputError, align, check_records, first_copies, get_id, get_path
from service.metrics.ranking import lis_match, lis_match_chance
from service.metrics.report import ReferenceBlock, Report, listed, make_report, reference_block

BENCHMARK = "innoeval"
LABELS = ("reject", "poster", "spotlight", "oral", "highlight")
# Tiers used for groups and pairs: oral 4 > spotlight 3 > poster 2 > reject 1. A highlight (CVPR's label for the
# papers between poster and oral) is put level with spotlight.
TIER = {"reject": 1, "poster": 2, "spotlight": 3, "highlight": 3, "oral": 4}
BINARY = {"reject": "reject", "poster": "accept", "spotlight": "accept", "oral": "accept", "highlight": "accept"}
TERNARY = {"reject": "reject", "poster": "poster", "spotlight": "top", "oral": "top", "highlight": "top"}

_DECISION_WORD = re.compile(r"\b(reject(?:ed|ion)?|posters?|spotlights?|orals?|highlights?)\b", re.IGNORECASE)


def parse_decision(text: Any) -> str | None:
    """One InnoEval label from "Accept (Oral)", "oral", "Reject", ...; None if none or two different labels."""
    if not isinstance(text, str):
        return None
    found = {_canonical(word) for word in _DECISION_WORD.findall(text)}
    return found.pop() if len(found) == 1 else None


def _canonical(word: str) -> str:
    word = word.lower()
    return "reject" if word.startswith("reject") else word.rstrip("s")


def _gold_label(value: Any, *, source: str, index: int, field: str) -> str:
    label = parse_decision(value)
    if label is None:
        raise MetricsInputError(f"cannot read a decision ({', '.join(LABELS)}) from {value!r}", source=source,
                                index=index, field=field)
    return label


def _prediction_ids(predictions: Sequence[Mapping[str, Any]], key: str = "id") -> list[tuple[str, Mapping]]:
    return [(get_id(item, key, source="predictions", index=i), item) for i, item in enumerate(predictions)]


# ---------------------------------------------------------------------------------------------- points


def score_points(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> Report:
    """Accuracy and macro-F1 of the decision, on the full label set and the binary and ternary mappings."""
    gold = check_records(gold, source="gold")
    predictions = check_records(predictions, source="predictions")
    truth: dict[str, str] = {}
    gold_duplicates: list[str] = []
    gold_conflicts: set[str] = set()
    for index, record in enumerate(gold):
        paper = get_id(record, "paper_id", source="gold", index=index)
        label = _gold_label(get_path(record, "decision", source="gold", index=index), source="gold", index=index,
                            field="decision")
        if paper in truth:
            gold_duplicates.append(paper)
            if truth[paper] != label:
                gold_conflicts.add(paper)
        else:
            truth[paper] = label
    for paper in gold_conflicts:
        del truth[paper]
    if not truth:
        raise MetricsInputError("no usable gold item (all conflicting)", source="gold")

    alignment = align(list(truth), _prediction_ids(predictions),
                      answer=lambda item: parse_decision(item.get("prediction")))
    ids = list(truth)
    y_true = [truth[paper] for paper in ids]
    y_pred: list[str | None] = []
    invalid: list[str] = []
    for paper in ids:
        if paper not in alignment.matched:
            y_pred.append(None)
            continue
        _, item = alignment.matched[paper]
        predicted = parse_decision(item.get("prediction"))
        if predicted is None:
            invalid.append(paper)
        y_pred.append(predicted)

    metrics: dict[str, float | None] = {}
    details: dict[str, Any] = {}
    for name, mapping in (("full", None), ("binary", BINARY), ("ternary", TERNARY)):
        true_m = y_true if mapping is None else [mapping[label] for label in y_true]
        pred_m = y_pred if mapping is None else [None if label is None else mapping[label] for label in y_pred]
        order = LABELS if mapping is None else tuple(dict.fromkeys(mapping.values()))
        accuracy, macro_f1 = accuracy_and_macro_f1(true_m, pred_m, label_order=order)
        metrics[f"{name}.accuracy"] = accuracy
        metrics[f"{name}.macro_f1"] = macro_f1
        details[f"{name}.confusion"] = confusion(true_m, pred_m, label_order=order)

    details |= {"invalid_ids": listed(invalid), "missing_ids": listed(alignment.missing),
                "duplicate_ids": listed(alignment.duplicate), "unknown_ids": listed(alignment.unknown),
                "gold_duplicate_ids": listed(gold_duplicates), "gold_conflict_ids": listed(sorted(gold_conflicts))}
    return make_report(
        benchmark=BENCHMARK, task="points", n=len(ids), metrics=metrics,
        reference=reference_points(gold, predictions),
        counts=alignment.counts() | {"invalid": len(invalid), "gold_duplicates": len(gold_duplicates),
                                     "gold_conflicts": len(gold_conflicts)},
        counting={
            "gold_duplicates": "a paper_id repeated in the gold with the same decision: evaluated once",
            "gold_conflicts": "a paper_id repeated in the gold with different decisions: left out of the evaluation",
            "labels": "full: reject, poster, spotlight, oral, highlight; binary: reject vs accept; ternary: "
                      "reject / poster / top (spotlight, oral, highlight). A prediction names exactly one label "
                      "(\"Accept (Oral)\" or \"oral\"); plain \"Accept\" or two labels is invalid",
            "macro_f1": "unweighted mean of per-label F1 over the labels present in the gold or in a valid "
                        "prediction; items without a valid prediction lower the recall of their gold label",
        },
        details=details,
    )


# ---------------------------------------------------------------------------------------------- groups


@dataclass(frozen=True)
class Group:
    query: str
    order: tuple[str, ...]  # gold ranking, best first
    tiers: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.order)


def _read_group(record: Mapping[str, Any], index: int) -> tuple[str, list[tuple[str, int]]]:
    query = get_path(record, "query", source="gold", index=index)
    if not isinstance(query, Mapping):
        raise MetricsInputError("expected an object", source="gold", index=index, field="query")
    query_id = get_id(query, "paper_id", source="gold", index=index)
    decision = query.get("decision") or record.get("query_category")
    members = [(query_id, TIER[_gold_label(decision, source="gold", index=index, field="query.decision")])]
    matches = get_path(record, "matches", source="gold", index=index)
    if not isinstance(matches, Mapping) or not matches:
        raise MetricsInputError("expected a non-empty object of tier -> match", source="gold", index=index,
                                field="matches")
    for tier_name, match in matches.items():
        where = f"matches.{tier_name}"
        if not isinstance(match, Mapping):
            raise MetricsInputError("expected an object", source="gold", index=index, field=where)
        paper = match.get("paper_internal_id") or (match.get("paper") or {}).get("id")
        if not paper:
            raise MetricsInputError("missing paper id (paper_internal_id or paper.id)", source="gold", index=index,
                                    field=where)
        category = match.get("category") or tier_name
        members.append((str(paper), TIER[_gold_label(category, source="gold", index=index,
                                                      field=f"{where}.category")]))
    return query_id, members


def read_groups(gold: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Group], dict[str, list[str]]]:
    """Gold groups by query id, and the ids set aside by the duplicate rule: {reason: [query ids]}."""
    groups: dict[str, Group] = {}
    aside: dict[str, list[str]] = {"gold_duplicates": [], "gold_conflicts": [], "gold_tied_or_repeated": []}
    conflicts: set[str] = set()
    for index, record in enumerate(gold):
        query_id, members = _read_group(record, index)
        ids = [paper for paper, _ in members]
        tiers = [tier for _, tier in members]
        if len(set(ids)) != len(ids) or len(set(tiers)) != len(tiers):
            # Without one paper per tier the gold ranking is not a strict order: set aside, reported.
            aside["gold_tied_or_repeated"].append(query_id)
            continue
        ranked = sorted(members, key=lambda member: -member[1])
        group = Group(query_id, tuple(p for p, _ in ranked), tuple(t for _, t in ranked))
        if query_id in groups or query_id in conflicts:
            aside["gold_duplicates"].append(query_id)
            if query_id in groups and groups[query_id] != group:
                conflicts.add(query_id)
                del groups[query_id]
            continue
        groups[query_id] = group
    aside["gold_conflicts"] = sorted(conflicts)
    return groups, aside


def _group_answer(item: Mapping[str, Any]) -> str:
    return repr((item.get("best"), item.get("ranking")))


def score_groups(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> Report:
    """Best-selection accuracy, LIS match and exact-order accuracy of the predicted rankings."""
    gold = check_records(gold, source="gold")
    predictions = check_records(predictions, source="predictions")
    groups, aside = read_groups(gold)
    if not groups:
        raise MetricsInputError("no usable gold group", source="gold")
    alignment = align(list(groups), _prediction_ids(predictions), answer=_group_answer)

    best_hits: list[float] = []
    lis_scores: list[float] = []
    exact_hits: list[float] = []
    invalid_best: list[str] = []
    invalid_ranking: list[str] = []
    best_from_ranking = 0
    for query_id, group in groups.items():
        if query_id not in alignment.matched:
            best_hits.append(0.0)
            lis_scores.append(0.0)
            exact_hits.append(0.0)
            continue
        _, item = alignment.matched[query_id]
        ranking = item.get("ranking")
        valid_ranking = (isinstance(ranking, list) and all(isinstance(p, str) for p in ranking)
                         and len(ranking) == group.size and set(ranking) == set(group.order))
        ranked: list[str] | None = ranking if valid_ranking else None
        best = item.get("best")
        if best is None and isinstance(ranking, list) and ranking:
            best = ranking[0]
            best_from_ranking += 1
        if best not in group.order:
            invalid_best.append(query_id)
        if ranked is None:
            invalid_ranking.append(query_id)
        best_hits.append(float(best == group.order[0]))
        lis_scores.append(lis_match(group.order, ranked) if ranked is not None else 0.0)
        exact_hits.append(float(ranked is not None and tuple(ranked) == group.order))

    sizes = [group.size for group in groups.values()]
    invalid_any = set(invalid_best) | set(invalid_ranking)
    return make_report(
        benchmark=BENCHMARK, task="groups", n=len(groups), reference=reference_groups(gold, predictions),
        metrics={"best_accuracy": fmean(best_hits), "lis_match": fmean(lis_scores),
                 "exact_order_accuracy": fmean(exact_hits)},
        chance={"best_accuracy": fmean(1 / size for size in sizes),
                "lis_match": fmean(lis_match_chance(size) for size in sizes),
                "exact_order_accuracy": fmean(1 / factorial(size) for size in sizes)},
        counts=alignment.counts() | {
            "invalid": len(invalid_any), "invalid_best": len(invalid_best), "invalid_ranking": len(invalid_ranking),
            "best_from_ranking": best_from_ranking} | {reason: len(ids) for reason, ids in aside.items()},
        counting={
            "invalid": "groups with an invalid best or an invalid ranking (each counted wrong for its own metric)",
            "invalid_best": "best is not a paper of the group: best selection counted wrong",
            "invalid_ranking": "ranking is not exactly the group's papers, each once: LIS match 0, order wrong",
            "best_from_ranking": "predictions without `best`: the first paper of their ranking is their best",
            "gold_duplicates": "a query repeated in the gold (the real groups file repeats one): an identical "
                               "repeat is evaluated once; a repeat with other papers makes it a conflict",
            "gold_conflicts": "a query repeated with different papers or tiers: left out of the evaluation",
            "gold_tied_or_repeated": "a group without one paper per tier (no strict gold order): left out",
            "lis_match": "length of the longest increasing subsequence of the gold ranks read in predicted "
                         "order, divided by the group size; mean over groups",
            "chance": "expected value under a uniformly random prediction, averaged over the groups' sizes; "
                      "LIS chance is exact (RSK / hook length formula)",
        },
        details={"group_sizes": {str(size): sizes.count(size) for size in sorted(set(sizes))},
                 "lis_match_chance_by_size": {str(size): lis_match_chance(size) for size in sorted(set(sizes))},
                 "missing_ids": listed(alignment.missing), "duplicate_ids": listed(alignment.duplicate),
                 "unknown_ids": listed(alignment.unknown), "invalid_best_ids": listed(invalid_best),
                 "invalid_ranking_ids": listed(invalid_ranking)} | {f"{k}_ids": listed(v) for k, v in aside.items()},
    )


# ----------------------------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class Pair:
    papers: tuple[str, str]  # sorted: a pair is the unordered set {a, b}
    winner: str | None  # None for a tie in the gold
    difficulty: str


def pair_key(a: str, b: str) -> str:
    """Id of the unordered pair {a, b}, the same whichever paper is shown first."""
    first, second = sorted((a, b))
    return f"{first}|{second}"


def _difficulty(value: Any) -> str:
    if value is None:
        return "unspecified"
    text = str(value).strip().lower()
    return "hard" if text in {"difficult", "diff", "hard"} else text


def read_pairs(gold: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Pair], list[str], list[str]]:
    """Gold pairs by pair key, the repeated keys and the conflicting keys (left out)."""
    pairs: dict[str, Pair] = {}
    duplicates: list[str] = []
    conflicts: set[str] = set()
    for index, record in enumerate(gold):
        sides = []
        for side in ("paper_a", "paper_b"):
            paper = get_path(record, side, source="gold", index=index)
            if not isinstance(paper, Mapping):
                raise MetricsInputError("expected an object", source="gold", index=index, field=side)
            paper_id = get_id(paper, "paper_id", source="gold", index=index)
            tier = TIER[_gold_label(paper.get("decision"), source="gold", index=index, field=f"{side}.decision")]
            sides.append((paper_id, tier))
        (a, tier_a), (b, tier_b) = sides
        if a == b:
            raise MetricsInputError("paper_a and paper_b are the same paper", source="gold", index=index)
        winner = a if tier_a > tier_b else b if tier_b > tier_a else None
        key = pair_key(a, b)
        first, second = sorted((a, b))
        pair = Pair((first, second), winner, _difficulty(record.get("difficulty")))
        if key in pairs or key in conflicts:
            # group_id is not unique among pairs and the same two papers can come back under another group_id.
            duplicates.append(key)
            if key in pairs and pairs[key] != pair:
                conflicts.add(key)
                del pairs[key]
            continue
        pairs[key] = pair
    return pairs, duplicates, sorted(conflicts)


def read_pair_choice(item: Mapping[str, Any], a: str, b: str) -> str | None:
    """The preferred paper id of a pair prediction: a paper id (text or integer), or "A"/"B" read against its own
    a and b."""
    value = item.get("prediction")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # an integer paper id
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text in (a, b):
        return text
    letter = text.strip("()[]. ").upper()
    return {"A": a, "B": b}.get(letter)


def score_pairs(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> Report:
    """Pairwise accuracy overall and by difficulty; gold ties are reported and left out."""
    gold = check_records(gold, source="gold")
    predictions = check_records(predictions, source="predictions")
    pairs, gold_duplicates, gold_conflicts = read_pairs(gold)
    keyed: list[tuple[str, tuple[str, str, Mapping]]] = []
    for index, item in enumerate(predictions):
        a = get_id(item, "a", source="predictions", index=index)
        b = get_id(item, "b", source="predictions", index=index)
        if a == b:
            raise MetricsInputError("a and b are the same paper", source="predictions", index=index)
        keyed.append((pair_key(a, b), (a, b, item)))
    alignment = align(list(pairs), keyed, answer=lambda value: read_pair_choice(value[2], value[0], value[1]))

    scored = {key: pair for key, pair in pairs.items() if pair.winner is not None}
    ties = [key for key, pair in pairs.items() if pair.winner is None]
    if not scored:
        raise MetricsInputError("every gold pair is a tie: accuracy is undefined", source="gold")
    hits: dict[str, list[float]] = {}
    invalid: list[str] = []
    for key, pair in scored.items():
        correct = False
        if key in alignment.matched:
            _, (a, b, item) = alignment.matched[key]
            choice = read_pair_choice(item, a, b)
            if choice is None:
                invalid.append(key)
            correct = choice == pair.winner
        hits.setdefault("all", []).append(float(correct))
        hits.setdefault(pair.difficulty, []).append(float(correct))

    metrics: dict[str, float | None] = {"accuracy": fmean(hits["all"])}
    metrics |= {f"accuracy.{level}": fmean(values) for level, values in sorted(hits.items()) if level != "all"}
    missing_scored = [key for key in alignment.missing if key in scored]
    return make_report(
        benchmark=BENCHMARK, task="pairs", n=len(scored), metrics=metrics,
        reference=reference_pairs(gold, predictions),
        chance={name: 0.5 for name in metrics},
        counts={"missing": len(missing_scored), "duplicate": len(alignment.duplicate),
                "duplicate_conflicting": len(alignment.conflicting),
                "unknown_id": len(alignment.unknown), "invalid": len(invalid), "gold_ties": len(ties),
                "gold_duplicates": len(gold_duplicates), "gold_conflicts": len(gold_conflicts)},
        counting={
            "pair": "a pair is the unordered set {a, b}: a swapped presentation is the same pair; the prediction "
                    "names the preferred paper id, or \"A\"/\"B\" read against its own a and b",
            "invalid": "prediction that is neither paper of the pair nor A/B (a \"tie\" answer is invalid)",
            "gold_ties": "gold pairs whose two decisions are the same tier: no right answer, left out of n",
            "gold_duplicates": "the same two papers repeated in the gold (group_id is not unique among pairs and "
                               "is not used): an identical repeat is evaluated once",
            "gold_conflicts": "the same two papers repeated with another winner or difficulty: left out",
            "accuracy.<difficulty>": "accuracy within the file's `difficulty` (\"difficult\" is reported as hard)",
        },
        details={"n_by_difficulty": {level: len(values) for level, values in sorted(hits.items()) if level != "all"},
                 "gold_tie_pairs": listed(ties), "invalid_pairs": listed(invalid),
                 "missing_pairs": listed(missing_scored), "duplicate_pairs": listed(alignment.duplicate),
                 "unknown_pairs": listed(alignment.unknown), "gold_duplicate_pairs": listed(gold_duplicates),
                 "gold_conflict_pairs": listed(gold_conflicts)},
    )


# ------------------------------------------------------------------------------ reference (zjunlp/InnoEval)

REFERENCE = "zjunlp/InnoEval"
# The commit whose evaluation code the reference blocks reproduce.
INNOEVAL_COMMIT = "273d7a67e83e3ae45acf17e030912cec76f40a98"
_REFERENCE_TIERS = ("oral", "spotlight", "poster", "reject")  # the reference's label_order, best first
_EXACT_DECISIONS = {"accept (oral)": "oral", "oral": "oral", "accept (spotlight)": "spotlight",
                    "spotlight": "spotlight", "accept (poster)": "poster", "poster": "poster", "reject": "reject",
                    "reject.": "reject"}
_FIRST_COPY = "a prediction id given more than once is read from its first copy"


def reference_decision(value: Any) -> str | None:
    """The reference's decision reader: an exact label, else the first tier word found as a substring."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in _EXACT_DECISIONS:
        return _EXACT_DECISIONS[text]
    return next((tier for tier in _REFERENCE_TIERS if tier in text), None)


def reference_points(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> ReferenceBlock:
    """batch_pipeline.evaluate_accuracy: accuracy over the papers where both decisions read."""
    answers = first_copies(_prediction_ids(predictions))
    total = matched = missing = bad_prediction = bad_gold = no_id = 0
    for record in gold:  # every gold line, repeats included, as the reference iterates its dataset
        if not (record.get("paper_id") or record.get("id")):
            no_id += 1  # the reference's loader skips a line whose id is falsy (e.g. the integer 0)
            continue
        paper = str(record.get("paper_id") or record.get("id"))
        if paper not in answers:
            missing += 1
            continue
        label = reference_decision(record.get("decision"))
        predicted = reference_decision(answers[paper].get("prediction"))
        if label is None:
            bad_gold += 1
        elif predicted is None:
            bad_prediction += 1
        else:
            total += 1
            matched += label == predicted
    return reference_block(
        source=f"{REFERENCE}@{INNOEVAL_COMMIT} innoeval/pipeline/batch_pipeline.py evaluate_accuracy "
               "(with normalize_decision)",
        rule="every gold line is evaluated (a repeated paper counts each time); a paper without a prediction "
             "(a failed pipeline) is left out; a decision is read as an exact label or the first of oral, "
             "spotlight, poster, reject found inside the text (so \"highlight\" and plain \"Accept\" read as "
             "nothing and the paper is left out, and a non-text prediction is read as its text); accuracy = "
             f"matched / evaluable, 0.0 when nothing is evaluable; {_FIRST_COPY}",
        n=total, metrics={"accuracy": matched / total if total else 0.0},
        counts={"gold_lines": len(gold), "num_items": len(gold) - no_id, "evaluable": total, "matched": matched,
                "dropped_missing": missing, "dropped_unreadable_prediction": bad_prediction,
                "dropped_unreadable_gold": bad_gold, "skipped_gold_without_id": no_id},
        counting={"num_items": "the reference's Num items: gold lines its loader keeps (those with an id)",
                  "evaluable": "the reference's Evaluable (total_evaluable)",
                  "matched": "the reference's Matched",
                  "dropped_missing": "gold lines without a prediction: left out of the denominator",
                  "dropped_unreadable_prediction": "predictions no tier can be read from: left out",
                  "dropped_unreadable_gold": "gold decisions no tier can be read from (e.g. highlight): left out"})


def _reference_members(record: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """parse_groups_from_dataset: the matches' (paper id, label), or None for an entry without three of them."""
    matches = record.get("matches")
    members: list[tuple[str, str]] = []
    for key, match in (matches.items() if isinstance(matches, Mapping) else ()):
        if not isinstance(match, Mapping):
            continue
        paper = match.get("paper_internal_id") or match.get("paper_id") or match.get("id")
        label = match.get("category") or match.get("label") or match.get("tag") or key
        if paper:
            members.append((str(paper), str(label).lower()))
    return members if len(members) == 3 else None


def _reference_group(record: Mapping[str, Any], members: list[tuple[str, str]]) -> tuple[str, list[str]] | None:
    """validate_group_for_evaluation: the query id and the paper ids in tier order, or None (a skipped group)."""
    raw_query = record.get("query")
    query: Mapping[str, Any] = raw_query if isinstance(raw_query, Mapping) else {}
    main = record.get("paper_id") or record.get("paperId") or query.get("paper_id")
    labels = [label for _, label in members]
    main_label = next((tier for tier in _REFERENCE_TIERS if tier not in labels), None)  # query's label inferred
    if not main or main_label is None or any(label not in _REFERENCE_TIERS for label in labels):
        return None
    by_paper = {str(main): main_label} | dict(members)  # a repeated paper keeps its last label, as there
    if len(set(by_paper.values())) != 4:
        return None
    by_label = {label: paper for paper, label in by_paper.items()}
    return str(main), [by_label[tier] for tier in _REFERENCE_TIERS]


def _lcs(a: Sequence[int], b: Sequence[int]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    return table[0][0]


def reference_index_list(ranking: Any, papers: Sequence[str]) -> tuple[list[int], bool]:
    """The reference's ranking reader over paper ids: known ids once each, the rest appended in gold order."""
    seen: list[int] = []
    for paper in ranking if isinstance(ranking, list) else []:
        index = papers.index(str(paper)) + 1 if str(paper) in papers else None
        if index is not None and index not in seen:
            seen.append(index)
    filled = [index for index in range(1, len(papers) + 1) if index not in seen]
    return seen + filled, bool(filled)


def reference_groups(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> ReferenceBlock:
    """group_evaluation.run_group_evaluation: best, exact rank and LCS over the groups it validates and answers."""
    answers = first_copies(_prediction_ids(predictions))
    total = unparsed = invalid = missing = empty_best = filled_best = filled_ranking = 0
    best_matches = rank_matches = 0
    lcs_total = 0.0
    for record in gold:
        members = _reference_members(record)
        if members is None:
            unparsed += 1
            continue
        group = _reference_group(record, members)
        if group is None:
            invalid += 1
            continue
        query, papers = group
        if query not in answers:
            missing += 1  # the reference's call failed: process_single_group returns None and the group is skipped
            continue
        item = answers[query]
        best = item.get("best")
        if isinstance(best, str) and not best.strip():
            empty_best += 1  # int("") raises inside process_single_group, which then returns None
            continue
        if best is None:
            filled_best += 1
            best_index = 1  # ComparisonModule's getattr default for an absent best_idea_index: the gold best
        else:
            best_index = papers.index(str(best)) + 1 if str(best) in papers else 0
        index_list, filled = reference_index_list(item.get("ranking"), papers)
        filled_ranking += filled
        total += 1
        best_matches += best_index == 1
        rank_matches += index_list == [1, 2, 3, 4]
        lcs_total += _lcs(index_list, [1, 2, 3, 4]) / 4.0
    metrics = ({"best_acc": best_matches / total, "rank_acc": rank_matches / total, "rank_lcs": lcs_total / total}
               if total else {"best_acc": None, "rank_acc": None, "rank_lcs": None})
    return reference_block(
        source=f"{REFERENCE}@{INNOEVAL_COMMIT} innoeval/pipeline/group_evaluation.py run_group_evaluation / "
               "process_single_group (with RankingModule._parse_index_list)",
        rule="a gold group is used only with exactly three matches and the four labels oral, spotlight, poster, "
             "reject (the query's label is inferred as the one its matches lack; highlight groups are skipped); "
             "every gold line counts, repeats included; a group without a prediction is what the reference "
             "gets when its model call fails: process_single_group returns None and the group is left out; "
             "the ideas are presented in gold order, so a prediction without `best` (absent or null) gets "
             "the module's default best_idea_index 1, the gold best, while a `best` that is an empty string "
             "makes the reference's int(\"\") raise and the group is left out; a ranking is read as its "
             "known paper ids once each with the missing ones appended in gold order (an absent or empty "
             "ranking is the gold order); a `best` outside the group is wrong; rank_lcs = LCS(predicted, gold "
             f"order) / 4; {_FIRST_COPY}; the reference raises when no group is usable (None here)",
        n=total, metrics=metrics,
        counts={"gold_lines": len(gold), "not_parsed": unparsed, "evaluated": total,
                "skipped_groups": invalid + missing + empty_best, "skipped_invalid": invalid,
                "dropped_missing": missing, "dropped_empty_best": empty_best, "filled_best": filled_best,
                "filled_ranking": filled_ranking},
        counting={"not_parsed": "gold lines without exactly three matches: parse_groups_from_dataset drops them "
                                "before counting (in neither evaluated nor skipped_groups)",
                  "evaluated": "the reference's total_groups",
                  "skipped_groups": "the reference's skipped_groups: skipped_invalid + dropped_missing + "
                                    "dropped_empty_best",
                  "skipped_invalid": "groups the reference's validation skips (not the four labels oral, "
                                     "spotlight, poster, reject, e.g. a highlight group)",
                  "dropped_missing": "groups without a prediction (a failed call): left out of the denominator",
                  "dropped_empty_best": "predictions whose `best` is an empty string: the reference's int(\"\") "
                                        "raises and the group is left out",
                  "filled_best": "predictions without `best`: best taken as the gold best (index 1)",
                  "filled_ranking": "predicted rankings completed with the missing papers in gold order"})


def reference_priority(decision: Any) -> int:
    """pair_evaluation.get_decision_priority: oral 4, spotlight 3, poster 2, reject 1, else 0 (substrings)."""
    text = str(decision or "").lower()
    return next((4 - rank for rank, tier in enumerate(_REFERENCE_TIERS) if tier in text), 0)


def reference_pair_pick(item: Mapping[str, Any], a: str, b: str) -> str:
    """The paper the reference reads from a prediction: a paper id, else A if the text is exactly "A" or empty
    (the module's default), else B."""
    value = item.get("prediction")
    text = (str(value).strip() if value is not None else "") or "A"
    if text in (a, b):
        return text
    return a if text.upper() == "A" else b


def reference_pairs(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> ReferenceBlock:
    """pair_evaluation.run_pair_evaluation: accuracy over the pairs with an answer, ties as A."""
    keyed = []
    for index, item in enumerate(predictions):
        a = get_id(item, "a", source="predictions", index=index)
        b = get_id(item, "b", source="predictions", index=index)
        keyed.append((pair_key(a, b), (a, b, item)))
    answers = first_copies(keyed)
    correct: dict[str, list[int]] = {}
    missing = ties = read_as_b = 0
    for record in gold:
        a = str(record["paper_a"]["paper_id"])
        b = str(record["paper_b"]["paper_id"])
        key = pair_key(a, b)
        if key not in answers:
            missing += 1
            continue
        first, second, item = answers[key]
        priority_a = reference_priority(record["paper_a"].get("decision"))
        priority_b = reference_priority(record["paper_b"].get("decision"))
        ties += priority_a == priority_b
        truth = b if priority_b > priority_a else a
        value = item.get("prediction")
        text = (str(value).strip() if value is not None else "") or "A"
        read_as_b += text not in (first, second) and text.upper() not in ("A", "B")
        hit = int(reference_pair_pick(item, first, second) == truth)
        for level in ("all", _difficulty(record.get("difficulty"))):
            correct.setdefault(level, []).append(hit)
    metrics: dict[str, float | None] = {"accuracy": fmean(correct["all"]) if "all" in correct else None}
    metrics |= {f"accuracy.{level}": fmean(hits) for level, hits in sorted(correct.items()) if level != "all"}
    total = len(correct.get("all", []))
    return reference_block(
        source=f"{REFERENCE}@{INNOEVAL_COMMIT} innoeval/pipeline/pair_evaluation.py run_pair_evaluation (with "
               "determine_better_paper and PairComparisonModule's answer normalisation)",
        rule="every gold line counts, repeats included; a pair without a prediction (a failed comparison) is "
             "left out; the gold winner is the higher of oral 4, spotlight 3, poster 2, reject 1 found in the "
             "decision text (highlight is 0), a tie goes to paper A; an answer is A when it is exactly \"A\" "
             "after strip/upper or empty (the module's default), anything else is B (read against the "
             "prediction's own a and b; a paper id names that paper); accuracy = correct / evaluated; "
             "accuracy.<difficulty> is the number the reference prints for that file (it runs the easy and "
             "the difficult file separately); "
             f"{_FIRST_COPY}; the reference raises when nothing is evaluated (None here)",
        n=total, metrics=metrics,
        counts={"gold_lines": len(gold), "evaluated": total, "dropped_missing": missing,
                "gold_ties_scored_as_a": ties, "unreadable_read_as_b": read_as_b},
        counting={"dropped_missing": "gold pairs without a prediction: left out of the denominator",
                  "gold_ties_scored_as_a": "pairs whose two decisions have the same priority: A is the answer",
                  "unreadable_read_as_b": "answers that are neither A, B nor a paper id: read as B"})
