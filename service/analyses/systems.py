"""Per-system summary (mean HindSight score with a bootstrap interval, match rate, judge means) and comparisons."""

from itertools import combinations

from sqlalchemy.orm import Session

from service.analyses.prior_art import systems_prior_art
from service.analyses.selection import (
    Selection, load_ideas, load_judge_scores, number, scoring_contexts, unscored_count, window_report,
)
from service.analyses.stats import bootstrap_mean_ci, compare_samples
from service.judge_scores import DIMENSIONS


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
    # prior art: each group's class rates and anticipation score beside its score, and the differences (a group, or
    # the whole answer, without ideas scored with prior art has null there)
    blocks, prior_comparisons, prior_summary = systems_prior_art(
        session, ideas, level=selection.level, confidence=confidence, n_resamples=n_resamples, seed=seed,
        method=method)
    for group in groups:
        group["prior_art"] = blocks.get(group["group"])
    comparisons += prior_comparisons
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
        "prior_art": prior_summary,
    }
