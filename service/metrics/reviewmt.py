"""ReviewMT (arXiv 2406.05688): summary, review scores and final decision of generated peer reviews."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

import numpy as np
from sklearn.metrics import f1_score, mean_absolute_error

from service.metrics.classification import accuracy_and_macro_f1, confusion, positive_f1
from service.metrics.parsing import MetricsInputError, align, check_records, first_copies, get_id, get_path
from service.metrics.report import ReferenceBlock, Report, listed, make_report, reference_block

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


@dataclass
class ReviewGold:
    """The gold of each paper: its decision, its rating and its per-reviewer scores (either may be absent)."""

    decisions: dict[str, str] = field(default_factory=dict)
    ratings: dict[str, float] = field(default_factory=dict)
    review_scores: dict[str, list[float]] = field(default_factory=dict)


def read_gold(gold: Sequence[Mapping[str, Any]]) -> ReviewGold:
    """The gold papers by id; a repeated id, an unreadable decision or a non-numeric score is an input error."""
    result = ReviewGold()
    for index, record in enumerate(gold):
        paper = get_id(record, "id", source="gold", index=index)
        if paper in result.decisions:
            raise MetricsInputError(f"gold id {paper!r} is repeated", source="gold", index=index, field="id")
        raw = get_path(record, "decision", source="gold", index=index)
        decision = parse_decision(raw) or parse_decision(f"decision: {raw}")
        if decision is None:
            raise MetricsInputError(f"cannot read accept/reject from {raw!r}", source="gold", index=index,
                                    field="decision")
        result.decisions[paper] = decision
        rating = record.get("rating")
        if rating is not None:
            result.ratings[paper] = _gold_number(rating, index=index, field="rating")
        scores = record.get("scores")
        if scores is not None:
            if not isinstance(scores, list):
                raise MetricsInputError(f"expected a list of numbers (one per reviewer), got {scores!r}",
                                        source="gold", index=index, field="scores")
            result.review_scores[paper] = [_gold_number(value, index=index, field=f"scores[{i}]")
                                           for i, value in enumerate(scores)]
            if rating is None and result.review_scores[paper]:
                result.ratings[paper] = fmean(result.review_scores[paper])
    return result


@dataclass
class StrictTally:
    """What the strict rules found in the predictions, paper by paper (gold order)."""

    y_true: list[str] = field(default_factory=list)
    y_pred: list[str | None] = field(default_factory=list)
    summaries: int = 0
    reviews_generated: int = 0
    papers_without_reviews: int = 0
    score_truth: list[float] = field(default_factory=list)  # nan for a review whose paper has no gold score
    score_pred: list[float] = field(default_factory=list)
    reviews_without_gold: int = 0
    per_review: int = 0
    invalid: list[str] = field(default_factory=list)
    invalid_reviews: list[str] = field(default_factory=list)

    def add_reviews(self, paper: str, reviews: list[Any], gold: ReviewGold) -> None:
        """Each parsed review against its own reviewer's gold score, else against the paper's rating."""
        own = gold.review_scores.get(paper)
        for position, review in enumerate(reviews):
            score = parse_score(_review_text(review))
            if score is None:
                continue
            self.score_pred.append(score)
            if own:
                self.score_truth.append(own[position] if position < len(own) else float("nan"))
                self.reviews_without_gold += position >= len(own)
                self.per_review += position < len(own)
            else:
                self.score_truth.append(gold.ratings.get(paper, float("nan")))

    def add(self, paper: str, item: Mapping[str, Any] | None, gold: ReviewGold) -> None:
        """One gold paper with its usable prediction (None when it has none, or conflicting copies)."""
        self.y_true.append(gold.decisions[paper])
        if item is None:
            self.y_pred.append(None)
            return
        summary = item.get("summary")
        self.summaries += isinstance(summary, str) and bool(summary.strip())
        reviews = item.get("reviews")
        if reviews is not None and not isinstance(reviews, list):
            self.invalid_reviews.append(paper)
        reviews = reviews if isinstance(reviews, list) else []
        self.papers_without_reviews += not reviews
        self.reviews_generated += len(reviews)
        self.add_reviews(paper, reviews, gold)
        predicted = parse_decision(item.get("decision"))
        if predicted is None:
            self.invalid.append(paper)
        self.y_pred.append(predicted)

    def metrics(self) -> dict[str, float | None]:
        n = len(self.y_true)
        rated = [(t, p) for t, p in zip(self.score_truth, self.score_pred) if t == t]  # t == t: not nan
        accuracy, macro_f1 = accuracy_and_macro_f1(self.y_true, self.y_pred, label_order=DECISIONS)
        return {
            "paper_hit_rate": self.summaries / n,
            "review_hit_rate": len(self.score_pred) / self.reviews_generated if self.reviews_generated else None,
            "decision_hit_rate": sum(label is not None for label in self.y_pred) / n,
            "score_mae": mean_absolute_error([t for t, _ in rated], [p for _, p in rated]) if rated else None,
            "decision.accuracy": accuracy,
            "decision.f1_accept": positive_f1(self.y_true, self.y_pred, positive="accept"),
            "decision.macro_f1": macro_f1,
        }

    def counts(self) -> dict[str, int]:
        return {"invalid": len(self.invalid), "summaries": self.summaries,
                "reviews_generated": self.reviews_generated, "reviews_parsed": len(self.score_pred),
                "reviews_scored": sum(t == t for t in self.score_truth),
                "papers_without_reviews": self.papers_without_reviews,
                "invalid_reviews": len(self.invalid_reviews), "reviews_scored_per_reviewer": self.per_review,
                "reviews_without_gold": self.reviews_without_gold}


COUNTING = {
    "invalid": "prediction whose decision text gives no single decision: counted wrong. " + DECISION_RULE,
    "paper_hit_rate": "papers with a non-empty summary / n (a missing paper is a miss)",
    "review_hit_rate": "generated reviews with a parsable score / reviews_generated. " + SCORE_RULE,
    "decision_hit_rate": "papers with a parsable decision / n",
    "score_mae": "mean absolute error over the parsed reviews (n = reviews_scored): review i against the gold "
                 "score of reviewer i (`scores`, reviews_scored_per_reviewer) when the gold gives per-review "
                 "scores, else against the paper's `rating`; papers without gold scores add none",
    "invalid_reviews": "predictions whose `reviews` is not a list (e.g. one string): read as no reviews, counted "
                       "here and in papers_without_reviews",
    "reviews_without_gold": "parsed reviews beyond the number of gold per-review scores: not in the MAE",
    "decision.f1_accept": "F1 with accept as the positive class; a missing or invalid decision is not accept",
    "decision.macro_f1": "unweighted mean of the F1 of accept and of reject",
}


def score_reviews(gold: Sequence[Mapping[str, Any]], predictions: Sequence[Mapping[str, Any]]) -> Report:
    """Paper, review and decision hit rates; score MAE over parsed reviews; decision F1 and macro-F1."""
    gold = check_records(gold, source="gold")
    predictions = check_records(predictions, source="predictions")
    truth = read_gold(gold)
    keyed = [(get_id(item, "id", source="predictions", index=i), item) for i, item in enumerate(predictions)]
    alignment = align(list(truth.decisions), keyed,
                      answer=lambda item: repr((item.get("summary"), item.get("reviews"), item.get("decision"))))
    tally = StrictTally()
    for paper in truth.decisions:
        tally.add(paper, alignment.matched[paper][1] if paper in alignment.matched else None, truth)
    return make_report(
        benchmark=BENCHMARK, task="review", n=len(truth.decisions), metrics=tally.metrics(),
        counts=alignment.counts() | tally.counts() | {"gold_rated_papers": len(truth.ratings)},
        reference=reference_reviews(keyed, truth),
        counting=COUNTING,
        details={"decision.confusion": confusion(tally.y_true, tally.y_pred, label_order=DECISIONS),
                 "invalid_ids": listed(tally.invalid), "invalid_reviews_ids": listed(tally.invalid_reviews),
                 "missing_ids": listed(alignment.missing),
                 "duplicate_ids": listed(alignment.duplicate), "unknown_ids": listed(alignment.unknown)},
    )


def _gold_number(value: Any, *, index: int, field: str) -> float:
    """A finite gold number; text such as "6", null or a boolean is an error naming the field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MetricsInputError(f"must be a number, got {value!r}", source="gold", index=index, field=field)
    return float(value)


# ------------------------------------------------------------------------ reference (chengtan9907/ReviewMT)

REFERENCE = "chengtan9907/ReviewMT"
# The commit whose src/module/metric_module.py the reference block reproduces.
REVIEWMT_COMMIT = "586e27bbdcd7459a001e38ead52b18a6af801664"
_REFERENCE_SCORE = re.compile(r"score: .{0,10}")


def _reference_text(value: Any) -> str:
    text = _review_text(value)
    return ("" if text is None else str(text)).lower()


def reference_review_score(review: Any) -> int | None:
    """The first number within ten characters after "score: ", 1..10, or None (the reference's rule)."""
    found = _REFERENCE_SCORE.findall(_reference_text(review))
    digits = re.findall(r"\d+", found[0]) if found else []
    value = int(digits[0]) if digits else None
    return value if value is not None and 1 <= value <= 10 else None


def reference_review_decision(decision: Any) -> int | None:
    """1 when "accept" occurs more often than "reject" (substrings, any case), 0 when less, None when equal."""
    text = _reference_text(decision)
    accepts, rejects = len(re.findall("accept", text)), len(re.findall("reject", text))
    return None if accepts == rejects else int(accepts > rejects)


def reference_reviews(keyed: Sequence[tuple[str, Mapping[str, Any]]], truth: ReviewGold) -> ReferenceBlock:
    """process_files: hit rates over the reference's turns, per-review MAE, decision F1 over decided papers."""
    answers = first_copies(keyed)
    total_reviews = missed_reviews = total_decisions = missed_decisions = 0
    absent = reviews_gold_unreadable = empty_decisions = 0
    errors: list[float] = []
    gt_decisions: list[int] = []
    pr_decisions: list[int] = []
    for paper, decision in truth.decisions.items():
        if paper not in answers:
            absent += 1  # no prediction file: skipped, not a miss
            continue
        item = answers[paper]
        raw_reviews = item.get("reviews")
        reviews: list[Any] = raw_reviews if isinstance(raw_reviews, list) else []
        own = truth.review_scores.get(paper) or (
            [truth.ratings[paper]] * len(reviews) if paper in truth.ratings else None)
        # The reference pairs the i-th predicted review with the i-th gold review (zip: the shorter decides).
        for position, review in enumerate(reviews[: len(own)] if own is not None else reviews):
            total_reviews += 1
            if own is None:
                reviews_gold_unreadable += 1  # the reference skips the turn after counting it: a hit
                continue
            score = reference_review_score(review)
            if score is None:
                missed_reviews += 1
            else:
                errors.append(abs(own[position] - score))
        # Every conversation ends with the decision maker's turn. A record without a decision (absent, null, "",
        # an empty CSV cell: one file layout cannot tell them apart from another) is the model's empty reply.
        total_decisions += 1
        reply = item.get("decision")
        empty_decisions += not _reference_text(reply).strip()
        predicted = reference_review_decision(reply)
        if predicted is None:
            missed_decisions += 1
        else:
            gt_decisions.append(int(decision == "accept"))
            pr_decisions.append(predicted)
    n = len(truth.decisions)
    f1 = float(f1_score(gt_decisions, pr_decisions, zero_division=0)) if gt_decisions else None
    metrics = {
        # The reference misses a paper whose conversation file holds no reply. A prediction record always holds
        # the decision turn, so a paper with a record is a hit and one without is skipped: (total - 0) / total.
        "paper_hit_rate": 1.0,
        "review_hit_rate": (total_reviews - missed_reviews) / total_reviews if total_reviews else None,
        "decision_hit_rate": (total_decisions - missed_decisions) / total_decisions if total_decisions else None,
        "review_mae_mean": float(np.mean(errors)) if errors else None,
        "review_mae_std": float(np.std(errors)) if errors else None,
        "decision_f1": f1,
    }
    return reference_block(
        source=f"{REFERENCE}@{REVIEWMT_COMMIT} src/module/metric_module.py process_files",
        rule="total is the number of gold papers (the reference's `total` argument; this commit sets it to 81, "
             "the size of its own test set, so for another set give the gold of that set and read total as n); "
             "a paper without a prediction is skipped and is NOT a miss; a prediction record is the model's "
             "conversation for its paper, which always ends with the decision turn, so no record is a missed "
             "paper (the reference's miss, a conversation with no reply at all, has no record form) and "
             "paper_hit_rate = (total - 0) / total = 1; a record whose decision is absent or empty (no "
             "`decision` field, \"\", null, an empty CSV cell: a file layout that leaves out null fields cannot "
             "be told from one that writes them) is the model's empty reply, a missed decision; the i-th "
             "predicted review is compared with the i-th gold "
             "per-review score, as far as the shorter list goes (a paper with only a `rating` uses it for every "
             "review; a paper without gold scores counts its reviews as hits); a review score is the first "
             "number within ten characters after \"score: \" (lower case), 1..10, else a missed review; a "
             "decision counts \"accept\" against \"reject\" substrings (\"not accepted\" and \"acceptance\" "
             "are accept), a draw is a missed decision and is left out of decision_f1 (sklearn f1_score, "
             "accept positive); non-text answers are read as their text; rates the reference would divide by "
             "zero are None; the review metrics assume an ICLR-style set (the reference prints 0.0 for other "
             "datasets); a prediction id given more than once is read from its first copy",
        n=len(gt_decisions), metrics=metrics,
        counts={"gold_papers": n, "skipped_without_prediction": absent,
                "total_reviews": total_reviews, "missed_reviews": missed_reviews,
                "reviews_without_gold_score": reviews_gold_unreadable, "reviews_scored": len(errors),
                "total_decisions": total_decisions, "empty_decisions": empty_decisions,
                "missed_decisions": missed_decisions, "decided": len(gt_decisions)},
        counting={"skipped_without_prediction": "gold papers without a prediction: neither hit nor miss",
                  "total_reviews": "review turns compared (predicted reviews up to the gold's count)",
                  "reviews_without_gold_score": "review turns whose gold has no score: counted as hits",
                  "empty_decisions": "decision turns with an empty reply (no `decision` field, \"\", null, an "
                                     "empty CSV cell): the paper is not missed, and each is a missed decision",
                  "decided": "papers whose decision text has more of one word than the other: the F1's n"})
