"""ReviewMT (arXiv 2406.05688): summary, review scores and final decision of generated peer reviews."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from sklearn.metrics import mean_absolute_error

from service.metrics.classification import accuracy_and_macro_f1, confusion, positive_f1
from service.metrics.parsing import MetricsInputError, align, check_records, get_id, get_path
from service.metrics.report import Report, listed, make_report

BENCHMARK = "reviewmt"
DECISIONS = ("accept", "reject")

DECISION_RULE = (
    "decision words are accept/accepts/accepted/accepting and reject/rejects/rejected/rejecting; the nouns "
    "\"acceptance\" and \"rejection\" count only right after recommend/recommendation or a cue (\"below the "
    "acceptance threshold\" is no decision); a negation (not, no, never, cannot, ...n't) up to two words "
    "before, in the same clause, flips the word (\"not accepted\" is reject); after a \"Decision:\" or "
    "\"Recommendation:\" cue only the rest of that sentence is read; no decision word, or both decisions, "
    "is invalid"
)
SCORE_RULE = (
    "a number after \"overall score/rating\", else after \"rating\", else after \"score\" (\"Score: 6\", "
    "\"rating: 6/10\", \"score of 7 out of 10\"); a denominator other than 10, a value outside 1..10, or "
    "different values at the chosen level is unparsable"
)

_CUE = re.compile(r"(?i)\b(?:final\s+)?(?:decision|recommendation)\s*(?::|-|is\b)")
_CLAUSE = re.compile(r"[.;,!?\n()\[\]]+")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_VERB = {"accept": "accept", "accepts": "accept", "accepted": "accept", "accepting": "accept",
         "reject": "reject", "rejects": "reject", "rejected": "reject", "rejecting": "reject"}
_NOUN = {"acceptance": "accept", "rejection": "reject"}
_RECOMMEND = {"recommend", "recommends", "recommended", "recommending", "recommendation"}
_NEGATORS = {"not", "no", "never", "cannot", "nor", "neither"}
_FLIP = {"accept": "reject", "reject": "accept"}


def _after_recommend(words: list[str], position: int) -> bool:
    """"recommend acceptance", "recommendation for/of rejection"."""
    previous = words[max(0, position - 2):position]
    return bool(previous) and (previous[-1] in _RECOMMEND
                               or (len(previous) == 2 and previous[1] in {"for", "of"} and previous[0] in _RECOMMEND))


def parse_decision(text: Any) -> str | None:
    """"accept" or "reject" from a free-text decision, or None (see DECISION_RULE)."""
    if not isinstance(text, str):
        return None
    cues = list(_CUE.finditer(text))
    if cues:
        text = re.split(r"[.\n]", text[cues[-1].end():].strip(), maxsplit=1)[0]
    found: set[str] = set()
    for clause in _CLAUSE.split(text.lower()):
        words = _WORD.findall(clause)
        for position, word in enumerate(words):
            decision = _VERB.get(word)
            if decision is None and word in _NOUN and (cues or _after_recommend(words, position)):
                decision = _NOUN[word]
            if decision is None:
                continue
            before = words[max(0, position - 2):position]
            if any(w in _NEGATORS or w.endswith("n't") for w in before):
                decision = _FLIP[decision]
            found.add(decision)
    return found.pop() if len(found) == 1 else None


_SCORE = re.compile(
    r"(?i)\b(overall\s+(?:score|rating)|rating|score)\b\s*(?:is|of|=|:)?\s*(-?\d+(?:\.\d+)?)"
    r"(?:\s*(?:/|out\s+of)\s*(\d+))?")
_SCORE_LEVEL = {"overall": 0, "rating": 1, "score": 2}


def parse_score(text: Any) -> float | None:
    """A review's score in 1..10, or None (see SCORE_RULE)."""
    if not isinstance(text, str):
        return None
    levels: dict[int, set[float | None]] = {}
    for label, number, denominator in _SCORE.findall(text):
        level = _SCORE_LEVEL[label.split()[0].lower()]
        value = float(number)
        valid = (denominator in ("", "10")) and 1 <= value <= 10
        levels.setdefault(level, set()).add(value if valid else None)
    if not levels:
        return None
    values = levels[min(levels)]
    return values.pop() if len(values) == 1 and None not in values else None


def _review_text(review: Any) -> Any:
    if isinstance(review, Mapping):
        return review.get("text", review.get("review"))
    return review


def score_reviews(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> Report:
    """Paper, review and decision hit rates; score MAE over parsed reviews; decision F1 and macro-F1."""
    gold = check_records(gold, source="gold")
    predictions = check_records(predictions, source="predictions")
    decisions: dict[str, str] = {}
    ratings: dict[str, float] = {}
    for index, record in enumerate(gold):
        paper = get_id(record, "id", source="gold", index=index)
        if paper in decisions:
            raise MetricsInputError(f"gold id {paper!r} is repeated", source="gold", index=index, field="id")
        raw = get_path(record, "decision", source="gold", index=index)
        decision = parse_decision(raw) or parse_decision(f"decision: {raw}")
        if decision is None:
            raise MetricsInputError(f"cannot read accept/reject from {raw!r}", source="gold", index=index,
                                    field="decision")
        decisions[paper] = decision
        rating = record.get("rating")
        if rating is None and isinstance(record.get("scores"), list) and record["scores"]:
            rating = fmean(record["scores"])
        if rating is not None:
            if isinstance(rating, bool) or not isinstance(rating, (int, float)):
                raise MetricsInputError(f"rating must be a number, got {rating!r}", source="gold", index=index,
                                        field="rating")
            ratings[paper] = float(rating)

    keyed = [(get_id(item, "id", source="predictions", index=i), item) for i, item in enumerate(predictions)]
    alignment = align(list(decisions), keyed,
                      answer=lambda item: repr((item.get("summary"), item.get("reviews"), item.get("decision"))))
    summaries = 0
    reviews_generated = 0
    papers_without_reviews = 0
    score_truth: list[float] = []
    score_pred: list[float] = []
    y_true: list[str] = []
    y_pred: list[str | None] = []
    invalid: list[str] = []
    for paper, decision in decisions.items():
        y_true.append(decision)
        if paper not in alignment.matched:
            y_pred.append(None)
            continue
        item = alignment.matched[paper][1]
        summary = item.get("summary")
        summaries += isinstance(summary, str) and bool(summary.strip())
        reviews = item.get("reviews")
        reviews = reviews if isinstance(reviews, list) else []
        papers_without_reviews += not reviews
        reviews_generated += len(reviews)
        for review in reviews:
            score = parse_score(_review_text(review))
            if score is not None:
                score_pred.append(score)
                score_truth.append(ratings.get(paper, float("nan")))
        predicted = parse_decision(item.get("decision"))
        if predicted is None:
            invalid.append(paper)
        y_pred.append(predicted)

    n = len(decisions)
    parsed_reviews = len(score_pred)
    rated = [(t, p) for t, p in zip(score_truth, score_pred) if t == t]  # drop reviews of papers without rating
    accuracy, macro_f1 = accuracy_and_macro_f1(y_true, y_pred, label_order=DECISIONS)
    decided = sum(label is not None for label in y_pred)
    metrics = {
        "paper_hit_rate": summaries / n,
        "review_hit_rate": parsed_reviews / reviews_generated if reviews_generated else None,
        "decision_hit_rate": decided / n,
        "score_mae": mean_absolute_error([t for t, _ in rated], [p for _, p in rated]) if rated else None,
        "decision.accuracy": accuracy,
        "decision.f1_accept": positive_f1(y_true, y_pred, positive="accept"),
        "decision.macro_f1": macro_f1,
    }
    return make_report(
        benchmark=BENCHMARK, task="review", n=n, metrics=metrics,
        counts=alignment.counts() | {
            "invalid": len(invalid), "summaries": summaries, "reviews_generated": reviews_generated,
            "reviews_parsed": parsed_reviews, "reviews_scored": len(rated),
            "papers_without_reviews": papers_without_reviews, "gold_rated_papers": len(ratings)},
        counting={
            "invalid": "prediction whose decision text gives no single decision: counted wrong. " + DECISION_RULE,
            "paper_hit_rate": "papers with a non-empty summary / n (a missing paper is a miss)",
            "review_hit_rate": "generated reviews with a parsable score / reviews_generated. " + SCORE_RULE,
            "decision_hit_rate": "papers with a parsable decision / n",
            "score_mae": "mean absolute error over the parsed reviews (n = reviews_scored) against the gold rating "
                         "of their paper (`rating`, or the mean of `scores`); papers without a gold rating add none",
            "decision.f1_accept": "F1 with accept as the positive class; a missing or invalid decision is not accept",
            "decision.macro_f1": "unweighted mean of the F1 of accept and of reject",
        },
        details={"decision.confusion": confusion(y_true, y_pred, label_order=DECISIONS),
                 "invalid_ids": listed(invalid), "missing_ids": listed(alignment.missing),
                 "duplicate_ids": listed(alignment.duplicate), "unknown_ids": listed(alignment.unknown)},
    )
