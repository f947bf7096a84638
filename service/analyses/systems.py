"""Per-system summary (mean HindSight score with a bootstrap interval, match rate, judge means) and comparisons."""

import warnings
from typing import Any
from itertools import combinations

import numpy as np
from scipy import stats
from sqlalchemy.orm import Session

from service.analyses.selection import (
    Selection, finite, load_ideas, load_judge_scores, number, scoring_contexts, unscored_count, window_report,
)
from service.judges import DIMENSIONS


def bootstrap_mean_ci(values, *, confidence: float, n_resamples: int, seed: int, method: str) -> list | None:
    """The bootstrap interval of the mean; a constant sample has the degenerate interval [mean, mean]."""
    x = finite(values)
    if x.size == 0:
        return None
    if x.size == 1 or np.ptp(x) == 0:
        return [float(x[0]), float(x[0])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                              method=method, rng=np.random.default_rng(seed))
    low, high = number(res.confidence_interval.low), number(res.confidence_interval.high)
    return None if low is None or high is None else [low, high]


def compare_samples(a, b) -> dict:
    """Mann-Whitney U and Welch t p-values, and Cliff's delta (from U: 2U/(n_a n_b) - 1; > 0 when a is larger)."""
    a, b = finite(a), finite(b)
    out: dict[str, Any] = {"n_a": int(a.size), "n_b": int(b.size), "mean_a": number(a.mean()) if a.size else None,
           "mean_b": number(b.mean()) if b.size else None, "mannwhitney_u": None, "mannwhitney_p": None,
           "welch_t": None, "welch_p": None, "effect_size": {"name": "cliffs_delta", "value": None}}
    if a.size == 0 or b.size == 0:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mw = stats.mannwhitneyu(a, b, alternative="two-sided")
        out.update(mannwhitney_u=number(mw.statistic), mannwhitney_p=number(mw.pvalue))
        out["effect_size"]["value"] = number(2 * mw.statistic / (a.size * b.size) - 1)
        if a.size >= 2 and b.size >= 2:
            t = stats.ttest_ind(a, b, equal_var=False)
            out.update(welch_t=number(t.statistic), welch_p=number(t.pvalue))
    return out


def systems_summary(session: Session, *, selection: Selection, confidence: float = 0.95, n_resamples: int = 2000,
                    seed: int = 0, method: str = "BCa") -> dict:
    """The paper's central table: per group n, mean score [CI], match rate, judge means; pairwise comparisons."""
    ideas = load_ideas(session, selection)
    judges = load_judge_scores(session, ideas["idea_pk"])
    judged = ideas[["idea_pk", "group"]].merge(judges, on="idea_pk")
    judge_names = sorted(judges["judge"].unique())
    groups, samples = [], {}
    for name, part in ideas.groupby("group", sort=True):
        per_judge = {}
        for judge in judge_names:
            rows = judged[(judged["group"] == name) & (judged["judge"] == judge)]
            per_judge[judge] = {d: {"mean": number(rows[d].mean()) if rows[d].notna().any() else None,
                                    "n": int(rows[d].notna().sum())} for d in DIMENSIONS}
        samples[name] = part
        groups.append({
            "group": name, "system": part["system"].iloc[0], "runs": sorted(part["run"].unique()),
            "run_ids": sorted(int(r) for r in part["run_id"].unique()), "ideas": int(len(part)),
            "mean_score": number(part["score"].mean()),
            "ci": bootstrap_mean_ci(part["score"], confidence=confidence, n_resamples=n_resamples, seed=seed,
                                    method=method),
            "median_score": number(part["score"].median()), "matched": int(part["matched"].sum()),
            "match_rate": number(part["matched"].mean()), "judges": per_judge,
            "windows": sorted(part["window"].unique()), "leak_risk_ideas": int(part["leak_risk"].sum()),
        })
    comparisons = []
    for a, b in combinations(sorted(samples), 2):
        comparisons.append({"a": a, "b": b, "metric": "hindsight", "judge": None, "dimension": None,
                            **compare_samples(samples[a]["score"], samples[b]["score"])})
        for judge in judge_names:
            for dim in DIMENSIONS:
                va = judged.loc[(judged["group"] == a) & (judged["judge"] == judge), dim]
                vb = judged.loc[(judged["group"] == b) & (judged["judge"] == judge), dim]
                if va.notna().any() and vb.notna().any():
                    comparisons.append({"a": a, "b": b, "metric": "judge", "judge": judge, "dimension": dim,
                                        **compare_samples(va, vb)})
    return {
        "selection": selection.as_dict(),
        "bootstrap": {"statistic": "mean", "method": method, "confidence_level": confidence,
                      "n_resamples": n_resamples, "seed": seed},
        "scoring": scoring_contexts(session, ideas["score_id"]),
        "unscored_ideas": unscored_count(session, selection),
        **window_report(ideas, selection),
        "judges": judge_names,
        "groups": groups,
        "comparisons": comparisons,
    }
