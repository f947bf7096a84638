"""Novelty-judge audit (after noy-sternlicht/novelty-eval): pairwise and pointwise accuracy, and two-run flip rate."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

import numpy as np

from service.metrics.classification import accuracy_and_macro_f1
from service.metrics.parsing import Alignment, MetricsInputError, align, check_records, get_id, get_path
from service.metrics.report import Report, listed, make_report

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


def _settings(pairs: Mapping[str, Any], setting_of) -> dict[str, list[str]]:
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
        chance={"accuracy": 0.5, "accuracy_strict": 0.5, "accuracy_without_ties": 0.5},
        counts=run.alignment.counts() | {"invalid": len(run.invalid), "n_without_ties": n_untied,
                                         "tie_verdicts": sum(v == TIE for v in run.verdicts.values())},
        counting=PAIRWISE_COUNTING,
        details={"invalid_ids": listed(run.invalid), "missing_ids": listed(run.alignment.missing),
                 "duplicate_ids": listed(run.alignment.duplicate), "unknown_ids": listed(run.alignment.unknown)},
    )


def parse_novelty(value: Any) -> str | None:
    """"novel" / "not_novel" from a label, yes/no or boolean; None otherwise."""
    if isinstance(value, bool):
        return "novel" if value else "not_novel"
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
        counts=alignment.counts() | {"invalid": len(invalid)},
        counting={"invalid": "verdict other than novel / not novel (also yes/no, true/false): counted wrong",
                  "macro_f1": "unweighted mean of the F1 of novel and of not novel"},
        details={"invalid_ids": listed(invalid), "missing_ids": listed(alignment.missing),
                 "duplicate_ids": listed(alignment.duplicate), "unknown_ids": listed(alignment.unknown)},
    )


def paired_bootstrap(before: np.ndarray, after: np.ndarray, *, n_boot: int = 2000, seed: int = 0,
                     level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of mean(after - before), resampling items with replacement (seeded)."""
    difference = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    chunk = max(1, 2_000_000 // max(1, difference.size))  # bound memory on large benchmarks
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        draws = rng.integers(0, difference.size, size=(stop - start, difference.size))
        means[start:stop] = difference[draws].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def audit_pairwise(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]], *,
                   predictions_after: Sequence[Mapping[str, Any]], n_boot: int = 2000, seed: int = 0) -> Report:
    """Two runs of a pairwise judge (e.g. two prompts): both accuracies, flip rate and a paired bootstrap CI."""
    if n_boot < 1:
        raise MetricsInputError("must be at least 1", field="n_boot")
    pairs = read_pairwise_gold(check_records(gold, source="gold"))
    before = read_pairwise_run(pairs, predictions, source="predictions")
    after = read_pairwise_run(pairs, predictions_after, source="predictions_after")
    scores_before, scores_after = before.scores(pairs), after.scores(pairs)

    compared = [key for key in pairs if before.verdicts[key] is not None and after.verdicts[key] is not None]
    flips = [key for key in compared if before.verdicts[key] != after.verdicts[key]]
    right = {key: (before.verdicts[key] == pair.winner, after.verdicts[key] == pair.winner)
             for key, pair in pairs.items()}
    became_right = [key for key in flips if right[key] == (False, True)]
    became_wrong = [key for key in flips if right[key] == (True, False)]
    only_before = [key for key in pairs if before.verdicts[key] is not None and after.verdicts[key] is None]
    only_after = [key for key in pairs if before.verdicts[key] is None and after.verdicts[key] is not None]
    low, high = paired_bootstrap(scores_before, scores_after, n_boot=n_boot, seed=seed)

    metrics_before, _ = _pairwise_metrics(pairs, before)
    metrics_after, _ = _pairwise_metrics(pairs, after)
    metrics: dict[str, float | None] = {f"before.{k}": v for k, v in metrics_before.items()}
    metrics |= {f"after.{k}": v for k, v in metrics_after.items()}
    metrics |= {"flip_rate": len(flips) / len(compared) if compared else None,
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
                                   f"interval of a paired bootstrap over pairs, {n_boot} resamples, seed {seed}",
        },
        details={"flip_ids": listed(flips), "became_right_ids": listed(became_right),
                 "became_wrong_ids": listed(became_wrong), "only_before_ids": listed(only_before),
                 "only_after_ids": listed(only_after), "bootstrap": {"n_boot": n_boot, "seed": seed}},
    )
