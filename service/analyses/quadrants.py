"""HindSight score vs an LLM judge: the four quadrants, their counts and shares, and the ideas in each."""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy.orm import Session

from service.analyses.selection import (
    AnalysisError, NotFound, Selection, best_matches, check_dimension, load_ideas, load_judge_scores, number,
    pick_judge, scoring_contexts, unscored_count, window_report, with_judge,
)
from service.runs import matcher_labels

# key: (label, high HindSight, high judge)
QUADRANTS = {
    "true_positive": ("True Positive", True, True),
    "hidden_gem": ("Hidden Gem", True, False),
    "overhyped": ("Overhyped", False, True),
    "true_negative": ("True Negative", False, False),
}
SORT_KEYS = {"score": "score", "judge": "judge_value", "idea_id": "idea_id", "group": "group"}


@dataclass(frozen=True)
class Cut:
    """Where an axis splits high from low: high means strictly above the value (or matched)."""

    kind: str  # matched, median or value
    value: float | None = None

    @classmethod
    def parse(cls, text: str | float | None, *, axis: str, default: str) -> "Cut":
        field = "hindsight_cut" if axis == "hindsight" else "judge_cut"
        text = default if text is None or str(text).strip() == "" else str(text).strip().lower()
        allowed = ("matched", "median") if axis == "hindsight" else ("median",)
        if text in allowed:
            return cls(text)
        try:
            value = float(text)
        except ValueError:
            raise AnalysisError(field, f"expected {' or '.join(allowed)} or a number, got {text!r}") from None
        if not np.isfinite(value):
            raise AnalysisError(field, f"expected a finite number, got {text!r}")
        return cls("value", value)

    def resolve(self, values: pd.Series) -> "Cut":
        """The median made concrete over the selected values."""
        if self.kind == "median":
            return Cut("median", float(values.median()))
        return self

    def describe(self, name: str, *, matchers: Sequence[str] = (), level: str = "realised") -> dict:
        """The cut as a rule; `matched` names the match rules the scores were made with and the decision level."""
        if self.kind == "matched":
            rule = f"high {name}: matched (at least one {level} match by {'; '.join(matchers) or 'the matcher'}; " \
                   "a score > 0 unless every matched paper has zero impact)"
        else:
            rule = f"high {name}: {name} > {self.value:g}" + (" (the median of the selection)"
                                                               if self.kind == "median" else "")
        return {"kind": self.kind, "value": self.value, "rule": rule}


def quadrant_of(high_hs: bool, high_judge: bool) -> str:
    return next(k for k, (_, h, j) in QUADRANTS.items() if h == high_hs and j == high_judge)


def assign_quadrants(frame: pd.DataFrame, *, hindsight_cut: Cut, judge_cut: Cut) -> pd.DataFrame:
    """Adds high_hindsight, high_judge and quadrant to judged rows (rows without a judge value get no quadrant)."""
    out = frame.copy()
    judged = out["judge_value"].notna()
    out["high_hindsight"] = out["matched"] if hindsight_cut.kind == "matched" else out["score"] > hindsight_cut.value
    out["high_judge"] = out["judge_value"] > judge_cut.value
    out["quadrant"] = [quadrant_of(bool(h), bool(j)) if ok else None
                       for h, j, ok in zip(out["high_hindsight"], out["high_judge"], judged)]
    return out


def quadrant_points(session: Session, *, selection: Selection, judge: str | None, dimension: str = "overall",
                    hindsight_cut: str | None = None, judge_cut: str | None = None) -> tuple[pd.DataFrame, dict]:
    """Every selected idea with its judge value and quadrant, and the resolved cuts."""
    check_dimension(dimension)
    hs, jc = (Cut.parse(hindsight_cut, axis="hindsight", default="matched"),
              Cut.parse(judge_cut, axis="judge", default="median"))
    ideas = load_ideas(session, selection)
    if ideas.empty:
        raise NotFound("runs", "no scored ideas in the selection")
    judges = load_judge_scores(session, ideas["idea_pk"])
    judge = pick_judge(judges, judge)
    frame = with_judge(ideas, judges, judge=judge, dimension=dimension)
    judged = frame[frame["judge_value"].notna()]
    if judged.empty:
        raise NotFound("dimension", f"judge {judge!r} gave no {dimension!r} score to the selected ideas")
    hs, jc = hs.resolve(judged["score"]), jc.resolve(judged["judge_value"])
    frame = assign_quadrants(frame, hindsight_cut=hs, judge_cut=jc)
    meta = {"judge": judge, "dimension": dimension,
            "cuts": {"hindsight": hs.describe("HindSight score", matchers=matcher_labels(session, frame["score_id"]),
                                              level=selection.level),
                     "judge": jc.describe(f"{judge} {dimension}")}}
    return frame, meta


def quadrant_counts(frame: pd.DataFrame) -> list[dict]:
    """Counts and shares per group and for all; shares are over the judged ideas, the unjudged are counted apart."""
    rows = []
    parts = [(g, p) for g, p in frame.groupby("group", sort=True)] + [("all", frame)]
    for name, part in parts:
        judged = part[part["quadrant"].notna()]
        row = {"group": name, "ideas": int(len(part)), "judged": int(len(judged)),
               "unjudged": int(len(part) - len(judged))}
        for key in QUADRANTS:
            count = int((judged["quadrant"] == key).sum())
            row[key] = {"count": count, "share": count / len(judged) if len(judged) else None}
        rows.append(row)
    return rows


def idea_rows(frame: pd.DataFrame, best: dict[int, dict]) -> list[dict]:
    return [{"idea_pk": int(r.idea_pk), "idea_id": r.idea_id, "system": r.system, "run": r.run, "group": r.group,
             "score": float(r.score), "matched": bool(r.matched), "judge_value": number(r.judge_value),
             "quadrant": r.quadrant, "best_match": best.get(int(r.score_id))} for r in frame.itertuples()]


def quadrants(session: Session, *, selection: Selection, judge: str | None = None, dimension: str = "overall",
              hindsight_cut: str | None = None, judge_cut: str | None = None, quadrant: str | None = None,
              sort: str = "score", order: str = "desc", page: int = 1, page_size: int | None = 20,
              points: tuple[pd.DataFrame, dict] | None = None) -> dict:
    """The quadrant answer: cuts echoed, counts and shares per group, and a sorted page of ideas per quadrant.
    points: quadrant_points' answer for the same selection, judge, dimension and cuts, when the caller has it."""
    if quadrant is not None and quadrant not in QUADRANTS:
        raise AnalysisError("quadrant", f"expected one of {', '.join(QUADRANTS)}, got {quadrant!r}")
    if sort not in SORT_KEYS:
        raise AnalysisError("sort", f"expected one of {', '.join(SORT_KEYS)}, got {sort!r}")
    if order not in ("asc", "desc"):
        raise AnalysisError("order", f"expected asc or desc, got {order!r}")
    if page < 1 or (page_size is not None and page_size < 1):
        raise AnalysisError("page", "page and page_size must be at least 1")
    frame, meta = points or quadrant_points(session, selection=selection, judge=judge, dimension=dimension,
                                            hindsight_cut=hindsight_cut, judge_cut=judge_cut)
    lists = {}
    for key, (label, high_hs, high_j) in QUADRANTS.items():
        if quadrant is not None and key != quadrant:
            continue
        part = frame[frame["quadrant"] == key].sort_values(
            [SORT_KEYS[sort], "idea_id"], ascending=[order == "asc", True], kind="stable")
        total = len(part)
        if page_size is not None:
            part = part.iloc[(page - 1) * page_size: page * page_size]
        best = best_matches(session, part["score_id"])
        lists[key] = {"label": label, "high_hindsight": high_hs, "high_judge": high_j, "total": total,
                      "page": page, "page_size": page_size,
                      "pages": (max(1, -(-total // page_size)) if page_size else 1),
                      "items": idea_rows(part, best)}
    return {
        "selection": selection.as_dict(), **meta,
        "quadrants": {k: v[0] for k, v in QUADRANTS.items()},
        "scoring": scoring_contexts(session, frame["score_id"]),
        "unscored_ideas": unscored_count(session, selection),
        **window_report(frame, selection),
        "counts": quadrant_counts(frame),
        "sort": {"by": sort, "order": order},
        "ideas": lists,
    }
