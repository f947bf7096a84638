"""SIQA (arXiv 2603.06700): U = multiple-choice understanding, S = quality scoring from five level logits."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

import numpy as np
from scipy.special import softmax
from scipy.stats import pearsonr, spearmanr

from service.metrics.parsing import MetricsInputError, align, check_records, first_copies, get_id, get_path
from service.metrics.report import ReferenceBlock, Report, listed, make_report, reference_block

BENCHMARK = "siqa"
CHOICES = ("A", "B", "C", "D")
QUESTION_TYPES = ("yes-or-no", "what", "how")
# The SIQA Competition leaderboard's weights of the per-type accuracies.
TYPE_WEIGHTS = {"yes-or-no": 0.2, "what": 0.3, "how": 0.5}
LEVELS = ("bad", "poor", "fair", "good", "excellent")
DIMENSIONS = ("perception", "knowledge")

CHOICE_RULE = (
    "a choice is a capital A-D standing alone (not inside a word): \"B\", \"(B)\", \"Answer: B.\", "
    "\"The answer is B because ...\"; a whole answer of one letter may be lower case; a capital A followed by a "
    "lower-case word is the article (\"A good answer is C\" gives C) unless it follows answer/option/choice or "
    "a bracket, or the word is a verb or conjunction (\"A is correct\" gives A); no letter, or two different "
    "letters, is invalid"
)

_LONE_LETTER = re.compile(r"(?<![A-Za-z0-9])([A-D])(?![A-Za-z0-9])")
_WHOLE_LETTER = re.compile(r"^[\s\*_`\"'\(\[]*([A-Da-d])[\s\*_`\"'\)\]\.:,;!]*$")
_CUE_BEFORE = re.compile(r"(?i:\b(?:answer|option|choice)(?:\s+(?:is|would\s+be|will\s+be|should\s+be))?)"
                         r"\s*[:=\-]?\s*[\(\[]?\s*$")
_WORD_AFTER = re.compile(r"\s+([a-z]+)")
# After a lone "A", these words make it a choice ("A is correct"); any other lower-case word makes it the article.
_CHOICE_VERBS = frozenset({"is", "was", "seems", "appears", "looks", "fits", "matches", "because", "since", "and",
                           "or", "would", "could", "should", "might", "must", "best"})


def parse_choice(text: Any) -> str | None:
    """The one choice A-D a free-text answer names, or None (see CHOICE_RULE)."""
    if not isinstance(text, str):
        return None
    whole = _WHOLE_LETTER.match(text)
    if whole:
        return whole.group(1).upper()
    found: set[str] = set()
    for match in _LONE_LETTER.finditer(text):
        letter = match.group(1)
        if letter == "A" and not _CUE_BEFORE.search(text[: match.start()]):
            after = _WORD_AFTER.match(text, match.end())
            if after and after.group(1) not in _CHOICE_VERBS:
                continue
        found.add(letter)
    return found.pop() if len(found) == 1 else None


def normalise_type(value: Any) -> str | None:
    """"Yes/No", "yes_or_no", "What" ... -> one of QUESTION_TYPES; None when absent or unknown."""
    if value is None:
        return None
    text = re.sub(r"[\s_/]+", "-", str(value).strip().lower())
    text = {"yes-no": "yes-or-no", "yesno": "yes-or-no", "yes-or-no": "yes-or-no"}.get(text, text)
    return text if text in QUESTION_TYPES else None


def score_understanding(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> Report:
    """SIQA-U: accuracy overall and per question type, as a plain mean of the types and with leaderboard weights."""
    gold = check_records(gold, source="gold")
    predictions = check_records(predictions, source="predictions")
    answers: dict[str, str] = {}
    types: dict[str, str | None] = {}
    n_choices: dict[str, int] = {}
    allowed: dict[str, tuple[str, ...]] = {}
    for index, record in enumerate(gold):
        item = get_id(record, "id", source="gold", index=index)
        if item in answers:
            raise MetricsInputError(f"gold id {item!r} is repeated", source="gold", index=index, field="id")
        answer = str(get_path(record, "answer", source="gold", index=index)).strip().upper()
        if answer not in CHOICES:
            raise MetricsInputError(f"gold answer must be one of A-D, got {record['answer']!r}", source="gold",
                                    index=index, field="answer")
        answers[item] = answer
        raw_type = record.get("type")
        types[item] = normalise_type(raw_type)
        if raw_type is not None and types[item] is None:
            raise MetricsInputError(f"unknown question type {raw_type!r} (expected one of {QUESTION_TYPES})",
                                    source="gold", index=index, field="type")
        letters = _choice_letters(record.get("choices"), index=index)
        if letters is not None:
            if answer not in letters:
                raise MetricsInputError(f"gold answer {answer!r} is not one of the item's own choices "
                                        f"({', '.join(letters)})", source="gold", index=index, field="answer")
            allowed[item] = letters
            n_choices[item] = len(letters)

    keyed = [(get_id(item, "id", source="predictions", index=i), item) for i, item in enumerate(predictions)]
    alignment = align(list(answers), keyed, answer=lambda item: parse_choice(item.get("prediction")))
    correct: dict[str, float] = {}
    invalid: list[str] = []
    out_of_range: list[str] = []
    for item, answer in answers.items():
        choice = None
        if item in alignment.matched:
            choice = parse_choice(alignment.matched[item][1].get("prediction"))
            if choice is not None and item in allowed and choice not in allowed[item]:
                out_of_range.append(item)
                choice = None
            if choice is None:
                invalid.append(item)
        correct[item] = float(choice == answer)

    metrics: dict[str, float | None] = {"accuracy": fmean(correct.values())}
    by_type = {kind: [correct[item] for item in answers if types[item] == kind] for kind in QUESTION_TYPES}
    present = {kind: values for kind, values in by_type.items() if values}
    notes: list[str] = []
    for kind, values in present.items():
        metrics[f"accuracy.{kind}"] = fmean(values)
    if present:
        metrics["accuracy.type_mean"] = fmean(fmean(values) for values in present.values())
    if len(present) == len(QUESTION_TYPES):
        metrics["accuracy.type_weighted"] = sum(TYPE_WEIGHTS[kind] * fmean(by_type[kind]) for kind in QUESTION_TYPES)
    elif present:
        metrics["accuracy.type_weighted"] = None
        notes.append("accuracy.type_weighted needs all three question types in the gold")
    untyped = sum(1 for item in answers if types[item] is None)
    chance = {"accuracy": fmean(1 / n_choices[item] for item in answers)} if len(n_choices) == len(answers) else {}
    if not chance:
        notes.append("no chance level: the gold does not give every question's `choices`")
    return make_report(
        benchmark=BENCHMARK, task="u", n=len(answers), metrics=metrics, chance=chance,
        counts=alignment.counts() | {"invalid": len(invalid), "out_of_range": len(out_of_range),
                                     "untyped": untyped},
        reference=reference_understanding(gold, predictions),
        counting={
            "invalid": "answer with no clear choice, or a choice outside the item's own `choices`: " + CHOICE_RULE,
            "out_of_range": "answers naming a letter beyond the item's `choices` (\"D\" on a two-choice question): "
                            "counted wrong, part of invalid",
            "accuracy.type_mean": "plain mean of the per-type accuracies (types present in the gold)",
            "accuracy.type_weighted": "leaderboard weights: 0.2 yes-or-no + 0.3 what + 0.5 how",
            "untyped": "gold questions without a type: in the overall accuracy only",
        },
        details={"n_by_type": {kind: len(values) for kind, values in by_type.items()},
                 "invalid_ids": listed(invalid), "out_of_range_ids": listed(out_of_range),
                 "missing_ids": listed(alignment.missing), "duplicate_ids": listed(alignment.duplicate),
                 "unknown_ids": listed(alignment.unknown)},
        notes=notes,
    )


def _choice_letters(choices: Any, *, index: int) -> tuple[str, ...] | None:
    """The letters an item offers: A.. for a list of choices, the keys for an object keyed by letter."""
    if choices is None:
        return None
    if isinstance(choices, list) and choices:
        if len(choices) > len(CHOICES):
            raise MetricsInputError(f"at most {len(CHOICES)} choices (A-D), got {len(choices)}", source="gold",
                                    index=index, field="choices")
        return CHOICES[: len(choices)]
    if isinstance(choices, Mapping) and choices:
        letters = tuple(str(key).strip().upper() for key in choices)
        if not set(letters) <= set(CHOICES):
            raise MetricsInputError(f"choice keys must be letters A-D, got {list(choices)}", source="gold",
                                    index=index, field="choices")
        return letters
    raise MetricsInputError(f"expected a non-empty list (or an object keyed A-D), got {choices!r}", source="gold",
                            index=index, field="choices")


def expected_level(logits: Any) -> float | None:
    """Softmax over the five level logits (Bad..Excellent) -> expected level in [1, 5]; None when not 5 finite."""
    if not isinstance(logits, (list, tuple)) or len(logits) != len(LEVELS):
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in logits):
        return None
    return float(softmax(np.asarray(logits, dtype=float)) @ np.arange(1, len(LEVELS) + 1))


def _correlations(truth: list[float], predicted: list[float]) -> tuple[float | None, float | None]:
    if len(truth) < 2:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srcc = float(spearmanr(truth, predicted).statistic)
        plcc = float(pearsonr(truth, predicted).statistic)
    return (srcc if math.isfinite(srcc) else None), (plcc if math.isfinite(plcc) else None)


def score_scoring(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> Report:
    """SIQA-S: SRCC and PLCC of the expected level against the gold score, per dimension, and the combined score."""
    gold = check_records(gold, source="gold")
    predictions = check_records(predictions, source="predictions")
    truth: dict[str, dict[str, float]] = {}
    for index, record in enumerate(gold):
        item = get_id(record, "id", source="gold", index=index)
        if item in truth:
            raise MetricsInputError(f"gold id {item!r} is repeated", source="gold", index=index, field="id")
        truth[item] = {}
        for dimension in DIMENSIONS:
            value = record.get(dimension)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise MetricsInputError(f"gold score must be a finite number, got {value!r}", source="gold",
                                        index=index, field=dimension)
            truth[item][dimension] = float(value)
    dimensions = [d for d in DIMENSIONS if any(d in scores for scores in truth.values())]
    if not dimensions:
        raise MetricsInputError(f"no gold item has a score for {' or '.join(DIMENSIONS)}", source="gold")

    keyed = [(get_id(item, "id", source="predictions", index=i), item) for i, item in enumerate(predictions)]
    alignment = align(list(truth), keyed, answer=lambda item: repr([item.get(d) for d in dimensions]))
    metrics: dict[str, float | None] = {}
    counts = alignment.counts() | {"invalid": 0}
    details: dict[str, Any] = {"missing_ids": listed(alignment.missing), "duplicate_ids": listed(alignment.duplicate),
                               "unknown_ids": listed(alignment.unknown)}
    notes: list[str] = []
    scores: list[float] = []
    invalid_items: set[str] = set()
    for dimension in dimensions:
        items = [item for item, values in truth.items() if dimension in values]
        pairs: list[tuple[float, float]] = []
        invalid: list[str] = []
        for item in items:
            if item not in alignment.matched:
                continue
            level = expected_level(alignment.matched[item][1].get(dimension))
            if level is None:
                invalid.append(item)
            else:
                pairs.append((truth[item][dimension], level))
        invalid_items |= set(invalid)
        srcc, plcc = _correlations([t for t, _ in pairs], [p for _, p in pairs])
        combined = None if srcc is None or plcc is None else max((srcc + plcc) / 2, 0.0) * 100
        metrics |= {f"{dimension}.srcc": srcc, f"{dimension}.plcc": plcc, f"{dimension}.score": combined,
                    f"{dimension}.coverage": len(pairs) / len(items)}
        counts |= {f"{dimension}.n_gold": len(items), f"{dimension}.n_scored": len(pairs),
                   f"{dimension}.invalid": len(invalid)}
        details[f"{dimension}.invalid_ids"] = listed(invalid)
        if combined is None:
            notes.append(f"{dimension}: correlation undefined (fewer than 2 scored items, or a constant series)")
        else:
            scores.append(combined)
    counts["invalid"] = len(invalid_items)
    metrics["score"] = fmean(scores) if len(scores) == len(dimensions) else None
    return make_report(
        benchmark=BENCHMARK, task="s", n=len(truth), metrics=metrics, counts=counts,
        reference=reference_scoring(truth, keyed),
        counting={
            "invalid": "items with a dimension whose logits are not exactly five finite numbers",
            "<dimension>.srcc/plcc": "Spearman / Pearson correlation between the gold score and the expected level "
                                     "sum(k * softmax(logits)_k), k = 1..5 (Bad..Excellent), over the scored items "
                                     "only: a correlation cannot count a missing item as wrong, so n_scored and "
                                     "coverage are stated beside it",
            "<dimension>.score": "max((SRCC + PLCC) / 2, 0) * 100",
            "score": "plain mean of the per-dimension scores",
        },
        details=details, notes=notes,
    )


# ---------------------------------------------------------------------------- reference (commusim/SIQA-Eval)

REFERENCE = "commusim/SIQA-Eval"
# The commit whose eval/eval_pipeline.py the reference blocks reproduce (SIQA-U score = mean of the type accuracies).
SIQA_COMMIT = "ce6e7f9f2744ed91a51a663ec082d6b1c3d4922d"
# An earlier commit scored SIQA-U with TYPE_WEIGHTS, as the SIQA Competition leaderboard still does.
SIQA_WEIGHTED_COMMIT = "97281e207837bc6d5d26c8ae1af364156fce9353"
_SOURCE = f"{REFERENCE}@{SIQA_COMMIT} eval/eval_pipeline.py"


def reference_understanding(gold: Sequence[Mapping[str, Any]],
                            predictions: Sequence[Mapping[str, Any]]) -> ReferenceBlock:
    """evaluate_SIQA_U: exact letter after strip/upper, per type; the score is the mean of the type accuracies."""
    answers = first_copies([(get_id(item, "id", source="predictions", index=i), item)
                            for i, item in enumerate(predictions)])
    correct = {kind: 0 for kind in QUESTION_TYPES}
    total = {kind: 0 for kind in QUESTION_TYPES}
    untyped = missing = lenient_only = 0
    for record in gold:
        raw_type = record.get("type")
        kind = raw_type.strip().lower() if isinstance(raw_type, str) else ""
        if kind not in total:
            untyped += 1
            continue
        item = str(record["id"]).strip()
        truth = str(record["answer"]).strip().upper()
        value = answers[item].get("prediction") if item in answers else None
        missing += item not in answers
        exact = (value if isinstance(value, str) else "" if value is None else str(value)).strip().upper()
        total[kind] += 1
        correct[kind] += exact == truth
        lenient_only += exact != truth and parse_choice(value) == truth
    accuracy = {kind: correct[kind] / total[kind] if total[kind] else 0.0 for kind in total}
    present = [accuracy[kind] for kind in QUESTION_TYPES if total[kind]]
    metrics = {f"ACC_{kind}": value for kind, value in accuracy.items()}
    metrics["SIQA_U_Score"] = sum(present) / len(present) if present else 0.0
    metrics["SIQA_U_Score_weighted"] = sum(TYPE_WEIGHTS[kind] * accuracy[kind] for kind in QUESTION_TYPES)
    return reference_block(
        source=f"{_SOURCE} evaluate_SIQA_U",
        rule="only questions whose type, after strip() and lower(), is yes-or-no, what or how are counted "
             "(\"Yes/No\" or \"yes_or_no\" is not, and is skipped); a prediction is right only when it equals "
             "the gold letter after strip() and upper() (\"(B)\" or \"Answer: B\" is wrong); a missing "
             "prediction is the empty string, so wrong and kept in the denominator; a non-text prediction is "
             "read as its text and a type that is not text as no type (the reference would raise); a type "
             "without questions has ACC 0.0; SIQA_U_Score is the plain mean of the accuracies of the types "
             "that have questions (0.0 when none has); SIQA_U_Score_weighted is 0.2 ACC_yes-or-no + 0.3 "
             f"ACC_what + 0.5 ACC_how, the score of the reference's earlier commit {SIQA_WEIGHTED_COMMIT[:7]} "
             "and of the SIQA Competition leaderboard; no check against the "
             "item's `choices`; a prediction id given more than once is read from its first copy",
        n=sum(total.values()), metrics=metrics,
        counts={"gold_items": len(gold), "evaluated": sum(total.values()), "skipped_untyped": untyped,
                "missing_counted_wrong": missing, "lenient_only_right": lenient_only},
        counting={"skipped_untyped": "gold items whose type is not yes-or-no, what or how after strip() and "
                                     "lower(): not counted",
                  "missing_counted_wrong": "items without a prediction: wrong (the empty answer)",
                  "lenient_only_right": "answers the strict block's letter reader finds right and the "
                                        "reference's exact comparison counts wrong",
                  "SIQA_U_Score_weighted": "0.2 ACC_yes-or-no + 0.3 ACC_what + 0.5 ACC_how (SIQA-Competition/"
                                           "Leaderboard scripts/update_leaderboard.py; the reference at "
                                           f"{SIQA_WEIGHTED_COMMIT[:7]}, whose type key was yes/no)"})


def reference_level(logits: Any) -> float | None:
    """The predicted level the reference would hold: Σ k·softmax(logits)_k for five numbers, nan when a logit is
    nan or +inf (as the reference's softmax gives), None when the value is not five numbers."""
    if not isinstance(logits, (list, tuple)) or len(logits) != len(LEVELS):
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in logits):
        return None
    with np.errstate(invalid="ignore"):
        return float(softmax(np.asarray(logits, dtype=float)) @ np.arange(1, len(LEVELS) + 1))


def reference_scoring(truth: Mapping[str, Mapping[str, float]],
                      keyed: Sequence[tuple[str, Mapping[str, Any]]]) -> ReferenceBlock:
    """evaluate_SIQA_S: SRCC/PLCC per dimension over the items with all four values, nan propagating."""
    answers = first_copies(keyed)
    pairs: dict[str, list[tuple[float, float]]] = {dimension: [] for dimension in DIMENSIONS}
    incomplete = 0
    nan_levels = {dimension: 0 for dimension in DIMENSIONS}
    for item, gold_scores in truth.items():
        prediction = answers.get(item, {})
        levels = {dimension: reference_level(prediction.get(dimension)) for dimension in DIMENSIONS}
        values = [gold_scores.get("perception"), gold_scores.get("knowledge"), levels["perception"],
                  levels["knowledge"]]
        if any(value is None for value in values):
            incomplete += 1
            continue
        for dimension in DIMENSIONS:
            level = levels[dimension]
            assert level is not None
            nan_levels[dimension] += math.isnan(level)
            pairs[dimension].append((gold_scores[dimension], level))
    n = len(pairs["perception"])
    names = {"perception": ("Perceptual_SRCC", "Perceptual_PLCC", "Perceptual_Score"),
             "knowledge": ("Knowledge_SRCC", "Knowledge_PLCC", "Factual_Score")}
    metrics: dict[str, float | None] = {}
    if n == 0:
        metrics = {"SIQA_S_Score": 0.0, "Perceptual_Score": 0.0, "Factual_Score": 0.0}
    elif n == 1:  # pearsonr raises on one item: the reference prints nothing
        for name in [*(name for names_of in names.values() for name in names_of), "SIQA_S_Score"]:
            metrics[name] = None
    else:
        scores = []
        for dimension, (srcc_name, plcc_name, score_name) in names.items():
            srcc, plcc = _reference_correlations(pairs[dimension])
            score = max((srcc + plcc) / 2, 0) * 100  # max(nan, 0) is nan, as in the reference
            metrics |= {srcc_name: srcc, plcc_name: plcc, score_name: score}
            scores.append(score)
        metrics["SIQA_S_Score"] = (scores[0] + scores[1]) / 2
    return reference_block(
        source=f"{_SOURCE} evaluate_SIQA_S",
        rule="an item is used only when its gold perception and knowledge scores and both predicted levels "
             "are present (an item missing any one of the four is dropped from both dimensions); the predicted "
             "level is Σ k·softmax(logits)_k over the five logits, and a nan or +inf logit makes it nan, which "
             "the reference keeps: the item stays in both dimensions and that dimension's SRCC, PLCC and score "
             "and the SIQA_S_Score are nan, printed here as null (so is a correlation of a constant series); "
             "logits that are not five numbers are no level; with no usable item every score is 0.0, with one "
             "the reference raises (null here); a prediction id given more than once is read from its first "
             "copy",
        n=n, metrics=metrics,
        counts={"gold_items": len(truth), "evaluated": n, "dropped_incomplete": incomplete}
               | {f"nan_level_kept.{dimension}": count for dimension, count in nan_levels.items()},
        counting={"dropped_incomplete": "gold items without all four of gold perception, gold knowledge and "
                                        "both predicted levels (missing, or logits that are not five numbers): "
                                        "left out",
                  "nan_level_kept.<dimension>": "items kept whose predicted level is nan (a nan or +inf logit): "
                                                "the dimension's SRCC, PLCC and score are nan (null), as the "
                                                "reference prints them"})


def _reference_correlations(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """scipy's SRCC and PLCC as the reference calls them: nan for a nan level or a constant series."""
    truth, predicted = [t for t, _ in pairs], [p for _, p in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(spearmanr(truth, predicted)[0]), float(pearsonr(truth, predicted)[0])
