"""Spearman correlation between the HindSight score and each judge dimension, overall and per group."""

import warnings
from typing import Any

import numpy as np
from scipy import stats
from sqlalchemy.orm import Session

from service.analyses.selection import Selection, load_ideas, load_judge_scores, number, window_report
from service.judges import DIMENSIONS


def spearman(x, y) -> dict:
    """rho and p over the pairs where both values are present; None below 3 pairs or for a constant side."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    out: dict[str, Any] = {"n": int(x.size), "rho": None, "p": None}
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.spearmanr(x, y)
    out.update(rho=number(res.statistic), p=number(res.pvalue))
    return out


def correlations(session: Session, *, selection: Selection, judge: str | None = None) -> dict:
    """One row per (scope, judge, dimension); scope is "all" or a group."""
    ideas = load_ideas(session, selection)
    judges = load_judge_scores(session, ideas["idea_pk"])
    if judge is not None:
        judges = judges[judges["judge"] == judge]
    joined = ideas.merge(judges, on="idea_pk")
    rows = []
    for name in sorted(joined["judge"].unique()):
        by_judge = joined[joined["judge"] == name]
        scopes = [("all", by_judge)] + [(g, part) for g, part in by_judge.groupby("group", sort=True)]
        for dim in DIMENSIONS:
            if by_judge[dim].notna().sum() == 0:
                continue
            for scope, part in scopes:
                rows.append({"scope": scope, "judge": name, "dimension": dim,
                             **spearman(part["score"], part[dim])})
    return {"selection": selection.as_dict(), "method": "spearman", "x": "hindsight score",
            "ideas": int(len(ideas)), **window_report(ideas, selection), "rows": rows}
