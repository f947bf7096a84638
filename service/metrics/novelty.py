"""Novelty-judge audit (after noy-sternlicht/novelty-eval): pairwise and pointwise accuracy, and two-run flip rate."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

import warnings

import numpy as np
from scipy.stats import bootstrap

from service.metrics.classification import accuracy_and_macro_f1
from service.metrics.parsing import (Alignment, MetricsInputError, align, check_records, first_copies, get_id,
                                     get_path)
from service.metrics.report import ReferenceBlock, Report, listed, make_report, reference_block

BENCHMARK = "novelty"
TIE = "<tie>"
POINT_LABELS = ("novel", "not_novel")
_TIE_WORDS = {"tie", "equal", "same", "draw", "both", "neither", "c"}
_NOVEL = {"novel", "yes", "true", "1"}
_NOT_NOVEL = {"not novel", "not-novel", "not_novel", "non-novel", "non novel", "nonnovel", "no", "false", "0"}


@dataclass(frozen=True)
class GoldPair:
    ideas: tuple[str, str]  # as presented in the gold: a, b
    winner: str
    setting: str | None


def _letter(value: str) -> str:
    return value.strip().strip("()[]*. ").upper()


def read_pairwise_gold(gold: Sequence[Mapping[str, Any]]) -> dict[str, GoldPair]:
    """Gold pairs by id; the label names idea a or b ("A"/"B" or the idea id); a tie is an error."""
    pairs: dict[str, GoldPair] = {}
    for index, record in enumerate(gold):
        pair_id = get_id(record, "id", source="gold", index=index)
        if pair_id in pairs:
            raise MetricsInputError(f"gold id {pair_id!r} is repeated", source="gold", index=index, field="id")
        a = get_id(record, "a", source="gold", index=index)
        b = get_id(record, "b", source="gold", index=index)
        if a == b:
            raise MetricsInputError("a and b are the same idea", source="gold", index=index)
        label = str(get_path(record, "label", source="gold", index=index)).strip()
        winner = label if label in (a, b) else {"A": a, "B": b}.get(_letter(label))
        if winner is None:
            tie = label.lower() in _TIE_WORDS
            raise MetricsInputError(
                ("a tie is not a gold answer: the gold must name idea A or B" if tie else
                 f"label must be A, B or one of the pair's idea ids ({a!r}, {b!r}), got {label!r}"),
                source="gold", index=index, field="label")
        setting = record.get("setting")
        pairs[pair_id] = GoldPair((a, b), winner, None if setting is None else str(setting))
    return pairs


def read_verdict(item: Mapping[str, Any], pair: GoldPair) -> str | None:
    """The idea a pairwise verdict prefers, TIE, or None when invalid.

    Integers are accepted: an integer equal to one of the pair's idea ids names that idea, otherwise 0, 1 and 2
    are the reference judge's codes for idea A, idea B and a tie.

    "A"/"B" are read against the prediction's own a and b when it gives them (so a position-swapped
    presentation maps back to the same idea), else against the gold's.
    """
    a, b = item.get("a"), item.get("b")
    if a is None and b is None:
        a, b = pair.ideas
    elif {str(a), str(b)} != set(pair.ideas):
        return None
    a, b = str(a), str(b)
    value = item.get("prediction")
    if isinstance(value, int) and not isinstance(value, bool):
        # An integer idea id, else the reference judge's winner code: 0 = idea A, 1 = idea B, 2 = tie.
        return str(value) if str(value) in (a, b) else {0: a, 1: b, 2: TIE}.get(value)
    if not isinstance(value, str):
        return None
    if value.strip() in (a, b):
        return value.strip()
    letter = _letter(value)
    if letter.lower() in _TIE_WORDS:
        return TIE
    return {"A": a, "B": b}.get(letter)


@dataclass
class PairwiseRun:
    """One run's verdicts against the gold."""

    alignment: Alignment
    verdicts: dict[str, str | None] = field(default_factory=dict)  # gold id -> idea, TIE, or None (no valid one)
    invalid: list[str] = field(default_factory=list)

    def scores(self, pairs: Mapping[str, GoldPair]) -> np.ndarray:
        """Per gold pair: 1 right, 0.5 tie, 0 wrong, missing or invalid."""
        return np.array([_credit(self.verdicts[key], pair.winner) for key, pair in pairs.items()])


def _credit(verdict: str | None, winner: str) -> float:
    return 1.0 if verdict == winner else 0.5 if verdict == TIE else 0.0


def read_pairwise_run(pairs: Mapping[str, GoldPair], predictions: Sequence[Mapping[str, Any]], *,
                      source: str) -> PairwiseRun:
    predictions = check_records(predictions, source=source)
    keyed = [(get_id(item, "id", source=source, index=i), item) for i, item in enumerate(predictions)]
    alignment = align(list(pairs), keyed, source=source,
                      answer=lambda item: repr((item.get("a"), item.get("b"), item.get("prediction"))))
    run = PairwiseRun(alignment)
    for key, pair in pairs.items():
        verdict = None
        if key in alignment.matched:
            verdict = read_verdict(alignment.matched[key][1], pair)
            if verdict is None:
                run.invalid.append(key)
        run.verdicts[key] = verdict
    return run


def _pairwise_metrics(pairs: Mapping[str, GoldPair], run: PairwiseRun) -> tuple[dict[str, float | None], int]:
    scores = run.scores(pairs)
    untied = [score for key, score in zip(pairs, scores) if run.verdicts[key] != TIE]
    return {"accuracy": float(scores.mean()),
            "accuracy_strict": float((scores == 1.0).mean()),
            "accuracy_without_ties": fmean(s == 1.0 for s in untied) if untied else None}, len(untied)


def _settings(pairs: Mapping[str, Any], setting_of: Callable[[Any], str | None]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for key, item in pairs.items():
        setting = setting_of(item)
        if setting is not None:
            groups.setdefault(setting, []).append(key)
    return groups


PAIRWISE_COUNTING = {
    "accuracy": "right = 1, tie verdict = 0.5, wrong, missing or invalid = 0; mean over all n gold pairs",
    "accuracy_strict": "tie verdicts count wrong",
    "accuracy_without_ties": "over the pairs whose verdict is not a tie (n_without_ties); missing and invalid "
                             "still count wrong",
    "invalid": "verdict that is neither A, B, a tie word nor one of the pair's idea ids, or a prediction whose "
               "a/b are not the gold pair's ideas; position-swapped presentations are mapped back to idea ids "
               "through the prediction's own a and b before comparing",
}


def score_pairwise(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> Report:
    """Pairwise novelty accuracy with ties as 0.5, strict, and without ties; by setting when the gold has one."""
    pairs = read_pairwise_gold(check_records(gold, source="gold"))
    run = read_pairwise_run(pairs, predictions, source="predictions")
    metrics, n_untied = _pairwise_metrics(pairs, run)
    for setting, keys in sorted(_settings(pairs, lambda pair: pair.setting).items()):
        subset = {key: pairs[key] for key in keys}
        values, _ = _pairwise_metrics(subset, run)
        metrics[f"by_setting.{setting}.accuracy"] = values["accuracy"]
    return make_report(
        benchmark=BENCHMARK, task="pairwise", n=len(pairs), metrics=metrics,
        reference=reference_pairwise(pairs, predictions),
        chance={"accuracy": 0.5, "accuracy_strict": 0.5, "accuracy_without_ties": 0.5},
        counts=run.alignment.counts() | {"invalid": len(run.invalid), "n_without_ties": n_untied,
                                         "tie_verdicts": sum(v == TIE for v in run.verdicts.values())},
        counting=PAIRWISE_COUNTING,
        details={"invalid_ids": listed(run.invalid), "missing_ids": listed(run.alignment.missing),
                 "duplicate_ids": listed(run.alignment.duplicate), "unknown_ids": listed(run.alignment.unknown)},
    )


def parse_novelty(value: Any) -> str | None:
    """"novel" / "not_novel" from a label, yes/no, a boolean or the integers 1 / 0 (the reference judge's output);
    None otherwise."""
    if isinstance(value, bool):
        return "novel" if value else "not_novel"
    if isinstance(value, int):
        return {1: "novel", 0: "not_novel"}.get(value)
    if not isinstance(value, str):
        return None
    text = re.sub(r"\s+", " ", value.strip().strip(".!*\"'").lower())
    if text in _NOVEL:
        return "novel"
    if text in _NOT_NOVEL:
        return "not_novel"
    return None


def score_pointwise(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> Report:
    """Pointwise accuracy and macro-F1 of novel / not novel; by setting when the gold has one."""
    gold = check_records(gold, source="gold")
    predictions = check_records(predictions, source="predictions")
    truth: dict[str, str] = {}
    settings: dict[str, str | None] = {}
    for index, record in enumerate(gold):
        item = get_id(record, "id", source="gold", index=index)
        if item in truth:
            raise MetricsInputError(f"gold id {item!r} is repeated", source="gold", index=index, field="id")
        raw = get_path(record, "label", source="gold", index=index)
        label = parse_novelty(raw)
        if label is None:
            raise MetricsInputError(f"label must be novel or not novel, got {raw!r}", source="gold", index=index,
                                    field="label")
        truth[item] = label
        settings[item] = None if record.get("setting") is None else str(record["setting"])
    keyed = [(get_id(item, "id", source="predictions", index=i), item) for i, item in enumerate(predictions)]
    alignment = align(list(truth), keyed, answer=lambda item: parse_novelty(item.get("prediction")))
    predicted: dict[str, str | None] = {}
    invalid: list[str] = []
    for item in truth:
        label = None
        if item in alignment.matched:
            label = parse_novelty(alignment.matched[item][1].get("prediction"))
            if label is None:
                invalid.append(item)
        predicted[item] = label
    accuracy, macro_f1 = accuracy_and_macro_f1(list(truth.values()), list(predicted.values()),
                                               label_order=POINT_LABELS)
    metrics: dict[str, float | None] = {"accuracy": accuracy, "macro_f1": macro_f1}
    for setting, keys in sorted(_settings(settings, lambda s: s).items()):
        acc, f1 = accuracy_and_macro_f1([truth[k] for k in keys], [predicted[k] for k in keys],
                                        label_order=POINT_LABELS)
        metrics |= {f"by_setting.{setting}.accuracy": acc, f"by_setting.{setting}.macro_f1": f1}
    return make_report(
        benchmark=BENCHMARK, task="pointwise", n=len(truth), metrics=metrics,
        reference=reference_pointwise(truth, keyed),
        counts=alignment.counts() | {"invalid": len(invalid)},
        counting={"invalid": "verdict other than novel / not novel (also yes/no, true/false): counted wrong",
                  "macro_f1": "unweighted mean of the F1 of novel and of not novel"},
        details={"invalid_ids": listed(invalid), "missing_ids": listed(alignment.missing),
                 "duplicate_ids": listed(alignment.duplicate), "unknown_ids": listed(alignment.unknown)},
    )


def _mean_difference(before: np.ndarray, after: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.mean(after - before, axis=axis))


def paired_bootstrap(before: np.ndarray, after: np.ndarray, *, n_boot: int = 2000, seed: int = 0,
                     level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of mean(after - before), resampling items with replacement (seeded).

    scipy.stats.bootstrap(paired=True) draws the same index matrix as the loop it replaced
    (`default_rng(seed).integers(0, n, (n_boot, n))`), so the intervals are equal up to the last bit of the
    percentile interpolation (measured: at most 2e-16 apart).
    """
    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if before.size == 1:  # every resample of one item is that item (scipy refuses a sample of one)
        difference = float(after[0] - before[0])
        return difference, difference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant difference (e.g. n = 1) is a degenerate, valid interval
        result = bootstrap((before, after), _mean_difference, paired=True, vectorized=True, n_resamples=n_boot,
                           confidence_level=level, method="percentile", rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@dataclass(frozen=True)
class Flips:
    """Two runs' verdicts aligned by id: compared where both are valid, a flip where they differ."""

    compared: list[str]
    flips: list[str]
    only_before: list[str]  # valid in the first run only: not compared, reported
    only_after: list[str]

    @property
    def rate(self) -> float | None:
        return len(self.flips) / len(self.compared) if self.compared else None


def flip_count(before: Mapping[str, Any], after: Mapping[str, Any], *, keys: Sequence[str]) -> Flips:
    """The flip metric of the audit (None is no valid verdict): the one count behind `metrics novelty --task audit`
    and `hindsight judge audit`."""
    b = {key: before.get(key) for key in keys}
    a = {key: after.get(key) for key in keys}
    compared = [key for key in keys if b[key] is not None and a[key] is not None]
    return Flips(compared=compared, flips=[key for key in compared if b[key] != a[key]],
                 only_before=[key for key in keys if b[key] is not None and a[key] is None],
                 only_after=[key for key in keys if b[key] is None and a[key] is not None])


def audit_pairwise(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]], *,
                   predictions_after: Sequence[Mapping[str, Any]], n_boot: int = 2000, seed: int = 0) -> Report:
    """Two runs of a pairwise judge (e.g. two prompts): both accuracies, flip rate and a paired bootstrap CI."""
    if n_boot < 1:
        raise MetricsInputError("must be at least 1", field="n_boot")
    pairs = read_pairwise_gold(check_records(gold, source="gold"))
    before = read_pairwise_run(pairs, predictions, source="predictions")
    after = read_pairwise_run(pairs, predictions_after, source="predictions_after")
    scores_before, scores_after = before.scores(pairs), after.scores(pairs)

    flipped = flip_count(before.verdicts, after.verdicts, keys=list(pairs))
    compared, flips, only_before, only_after = (flipped.compared, flipped.flips, flipped.only_before,
                                                flipped.only_after)
    right = {key: (before.verdicts[key] == pair.winner, after.verdicts[key] == pair.winner)
             for key, pair in pairs.items()}
    became_right = [key for key in flips if right[key] == (False, True)]
    became_wrong = [key for key in flips if right[key] == (True, False)]
    low, high = paired_bootstrap(scores_before, scores_after, n_boot=n_boot, seed=seed)

    metrics_before, _ = _pairwise_metrics(pairs, before)
    metrics_after, _ = _pairwise_metrics(pairs, after)
    metrics: dict[str, float | None] = {f"before.{k}": v for k, v in metrics_before.items()}
    metrics |= {f"after.{k}": v for k, v in metrics_after.items()}
    metrics |= {"flip_rate": flipped.rate,
                "accuracy_difference": float(scores_after.mean() - scores_before.mean()),
                "accuracy_difference.ci95_low": low, "accuracy_difference.ci95_high": high}
    for setting, keys in sorted(_settings(pairs, lambda pair: pair.setting).items()):
        subset = {key: pairs[key] for key in keys}
        in_both = [key for key in keys if key in compared]
        metrics |= {f"by_setting.{setting}.before.accuracy": _pairwise_metrics(subset, before)[0]["accuracy"],
                    f"by_setting.{setting}.after.accuracy": _pairwise_metrics(subset, after)[0]["accuracy"],
                    f"by_setting.{setting}.flip_rate":
                        sum(key in flips for key in in_both) / len(in_both) if in_both else None}

    counts = {"missing": len(before.alignment.missing) + len(after.alignment.missing),
              "invalid": len(before.invalid) + len(after.invalid),
              "duplicate": len(before.alignment.duplicate) + len(after.alignment.duplicate),
              "duplicate_conflicting": len(before.alignment.conflicting) + len(after.alignment.conflicting),
              "unknown_id": len(before.alignment.unknown) + len(after.alignment.unknown)}
    for name, run in (("before", before), ("after", after)):
        counts |= {f"{name}.{key}": value for key, value in run.alignment.counts().items()}
        counts[f"{name}.invalid"] = len(run.invalid)
    counts |= {"compared": len(compared), "flips": len(flips), "became_right": len(became_right),
               "became_wrong": len(became_wrong), "flips_neither": len(flips) - len(became_right) - len(became_wrong),
               "only_before": len(only_before), "only_after": len(only_after),
               "not_compared": len(pairs) - len(compared)}
    return make_report(
        benchmark=BENCHMARK, task="audit", n=len(pairs), metrics=metrics,
        reference=reference_audit(pairs, predictions, predictions_after, n_boot=n_boot, seed=seed),
        chance={"before.accuracy": 0.5, "after.accuracy": 0.5},
        counts=counts,
        counting=PAIRWISE_COUNTING | {
            "missing/invalid/duplicate/unknown_id": "sums over the two runs; before.* and after.* give each run",
            "compared": "gold pairs with a valid verdict in both runs, aligned by id (never by row position)",
            "flip_rate": "verdicts that changed (idea A, idea B or tie, after mapping positions back to ideas) / "
                         "compared",
            "became_right/became_wrong": "flips from not right to right, and from right to not right",
            "flips_neither": "flips between two not-right verdicts (e.g. wrong idea -> tie)",
            "only_before/only_after": "pairs with a valid verdict in one run only: not compared, reported",
            "accuracy_difference": f"after - before accuracy (ties 0.5) over all n pairs; 95% percentile "
                                   f"interval of a paired bootstrap over pairs (scipy.stats.bootstrap, "
                                   f"paired=True, method='percentile'), {n_boot} resamples, seed {seed}",
        },
        details={"flip_ids": listed(flips), "became_right_ids": listed(became_right),
                 "became_wrong_ids": listed(became_wrong), "only_before_ids": listed(only_before),
                 "only_after_ids": listed(only_after), "bootstrap": {"n_boot": n_boot, "seed": seed}},
    )


# ---------------------------------------------------------------------- reference (noy-sternlicht/novelty-eval)

REFERENCE = "noy-sternlicht/novelty-eval"
# The commit whose metric and bootstrap code the reference blocks reproduce.
NOVELTY_COMMIT = "7159b2853ee4c8e1a7bd6a067898455f852dfc73"
_FIRST_COPY = "a prediction id given more than once is read from its first copy"


def _reference_verdicts(pairs: Mapping[str, GoldPair], predictions: Sequence[Mapping[str, Any]], *,
                        source: str) -> tuple[dict[str, tuple[float, float]], int, int]:
    """Per pair with a prediction: (correct, tie) as the reference scores it; and the missing / unreadable counts.

    The reference judge turns an unparsable answer into its tie code (2); a missing comparison is never scored.
    """
    answers = first_copies([(get_id(item, "id", source=source, index=i), item) for i, item in enumerate(predictions)])
    scored: dict[str, tuple[float, float]] = {}
    missing = unreadable = 0
    for key, pair in pairs.items():
        if key not in answers:
            missing += 1
            continue
        verdict = read_verdict(answers[key], pair)
        unreadable += verdict is None
        tie = verdict is None or verdict == TIE
        scored[key] = (float(not tie and verdict == pair.winner), float(tie))
    return scored, missing, unreadable


def _reference_accuracies(scored: Sequence[tuple[float, float]]) -> dict[str, float]:
    total = len(scored)
    ties = sum(tie for _, tie in scored)
    correct = sum(right for right, _ in scored)
    return {"accuracy_with_ties": (correct + 0.5 * ties) / total if total else 0.0,
            "accuracy_strict": correct / total if total else 0.0,
            "accuracy_without_ties": correct / (total - ties) if total - ties > 0 else 0.0}


def reference_pairwise(pairs: Mapping[str, GoldPair], predictions: Sequence[Mapping[str, Any]]) -> ReferenceBlock:
    """metrics.calculate_pairwise_accuracy: ties 0.5, over the comparisons that exist."""
    scored, missing, unreadable = _reference_verdicts(pairs, predictions, source="predictions")
    ties = int(sum(tie for _, tie in scored.values()))
    return reference_block(
        source=f"{REFERENCE}@{NOVELTY_COMMIT} src/novelty_eval/metrics.py calculate_pairwise_accuracy",
        rule="only comparisons that exist are scored: a pair without a prediction is left out; an unreadable "
             "verdict (or one for other ideas) is the judge's tie code and scores 0.5 (with ties), 0 (strict) "
             "and is left out of accuracy_without_ties; every accuracy is 0.0 when its denominator is empty; "
             + _FIRST_COPY,
        n=len(scored), metrics=_reference_accuracies(list(scored.values())),
        counts={"gold_pairs": len(pairs), "support": len(scored), "n_ties": ties,
                "support_without_ties": len(scored) - ties, "dropped_missing": missing,
                "unreadable_read_as_tie": unreadable},
        counting={"dropped_missing": "gold pairs without a prediction: not in the support",
                  "unreadable_read_as_tie": "invalid verdicts the strict block counts wrong: a tie here"})


def reference_pointwise(truth: Mapping[str, str],
                        keyed: Sequence[tuple[str, Mapping[str, Any]]]) -> ReferenceBlock:
    """metrics.compute_pointwise_metrics: binary counts over the items with a 0/1 prediction."""
    answers = first_copies(keyed)
    tp = tn = fp = fn = missing = unreadable = 0
    for item, label in truth.items():
        if item not in answers:
            missing += 1
            continue
        predicted = parse_novelty(answers[item].get("prediction"))
        if predicted is None:
            unreadable += 1  # the judge returns None for an answer without a 0/1 vote: skipped
            continue
        positive, predicted_positive = label == "novel", predicted == "novel"
        tp += positive and predicted_positive
        fn += positive and not predicted_positive
        fp += not positive and predicted_positive
        tn += not positive and not predicted_positive
    total = tp + tn + fp + fn

    def ratio(a: int, b: int) -> float:
        return a / b if b else 0.0

    p_pos, r_pos, p_neg, r_neg = ratio(tp, tp + fp), ratio(tp, tp + fn), ratio(tn, tn + fn), ratio(tn, tn + fp)
    f1_pos = 2 * p_pos * r_pos / (p_pos + r_pos) if p_pos + r_pos else 0.0
    f1_neg = 2 * p_neg * r_neg / (p_neg + r_neg) if p_neg + r_neg else 0.0
    return reference_block(
        source=f"{REFERENCE}@{NOVELTY_COMMIT} src/novelty_eval/metrics.py compute_pointwise_metrics",
        rule="an item without a prediction, or whose verdict reads as neither novel nor not novel (the judge's "
             "None), is skipped; novel is the positive class; every ratio is 0.0 when its denominator is "
             "empty; " + _FIRST_COPY,
        n=total, metrics={"accuracy": ratio(tp + tn, total), "f1_macro": (f1_pos + f1_neg) / 2, "f1_pos": f1_pos,
                          "f1_neg": f1_neg, "precision_pos": p_pos, "precision_neg": p_neg, "recall_pos": r_pos,
                          "recall_neg": r_neg},
        counts={"gold_items": len(truth), "evaluated": total, "support_pos": tp + fn, "support_neg": tn + fp,
                "dropped_missing": missing, "dropped_unreadable": unreadable},
        counting={"dropped_missing": "gold items without a prediction: skipped",
                  "dropped_unreadable": "verdicts that are not novel / not novel: skipped (strict: wrong)"})


def _delta_with_ties(before_correct: np.ndarray, before_tie: np.ndarray, after_correct: np.ndarray,
                     after_tie: np.ndarray) -> float:
    """The change in accuracy with ties (after - before), as the reference's paired statistic computes it."""
    return float(np.mean(after_correct + 0.5 * after_tie) - np.mean(before_correct + 0.5 * before_tie))


def reference_audit(pairs: Mapping[str, GoldPair], before: Sequence[Mapping[str, Any]],
                    after: Sequence[Mapping[str, Any]], *, n_boot: int, seed: int) -> ReferenceBlock:
    """analysis/stats_one_pass.py: paired BCa bootstrap of the accuracy change over the pairs both runs scored."""
    scored_before, missing_before, unreadable_before = _reference_verdicts(pairs, before, source="predictions")
    scored_after, missing_after, unreadable_after = _reference_verdicts(pairs, after,
                                                                        source="predictions_after")
    common = [key for key in pairs if key in scored_before and key in scored_after]
    arrays = [np.array([scored[key][column] for key in common], dtype=float)
              for scored in (scored_before, scored_after) for column in (0, 1)]
    metrics: dict[str, float | None] = {
        f"{name}.{metric}": value
        for name, scored in (("before", scored_before), ("after", scored_after))
        for metric, value in _reference_accuracies([scored[key] for key in common]).items()}
    metrics |= {"delta_accuracy_with_ties": float(_delta_with_ties(*arrays)) if common else None,
                "delta_accuracy_with_ties.ci_low": None, "delta_accuracy_with_ties.ci_high": None}
    if len(common) >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # BCa on degenerate data gives nan, reported as None
            result = bootstrap(tuple(arrays), _delta_with_ties, paired=True, vectorized=False, n_resamples=n_boot,
                               method="BCa", rng=np.random.default_rng(seed))
        metrics |= {"delta_accuracy_with_ties.ci_low": float(result.confidence_interval.low),
                    "delta_accuracy_with_ties.ci_high": float(result.confidence_interval.high)}
    return reference_block(
        source=f"{REFERENCE}@{NOVELTY_COMMIT} src/novelty_eval/analysis/stats_one_pass.py "
               "compute_bootstrap_results_pairwise_all",
        rule="the two runs are compared over the gold pairs both of them scored (a pair missing from either "
             "run is left out); unreadable verdicts are ties, as in the reference's pairwise accuracy; the "
             "interval is scipy.stats.bootstrap(paired=True, method='BCa', 95%, two-sided) of the change in "
             f"accuracy with ties, {n_boot} resamples from numpy.random.default_rng({seed}) (the reference "
             "defaults to 100000 resamples and seed 42: pass --n-boot 100000 --seed 42 to reproduce it); a "
             "BCa interval scipy cannot form (constant data, fewer than 2 pairs) is None; " + _FIRST_COPY,
        n=len(common), metrics=metrics,
        counts={"gold_pairs": len(pairs), "compared": len(common), "before.dropped_missing": missing_before,
                "after.dropped_missing": missing_after, "before.unreadable_read_as_tie": unreadable_before,
                "after.unreadable_read_as_tie": unreadable_after},
        counting={"compared": "gold pairs with a prediction in both runs: the bootstrap's n",
                  "<run>.dropped_missing": "pairs that run did not predict: left out of both runs' numbers"})
