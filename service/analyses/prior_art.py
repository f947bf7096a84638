"""Prior art in the analyses: per group the rate of each class with its Wilson interval at both levels, the
anticipation score (the HindSight score when anticipated, else 0, averaged over the ideas) beside the paper's score,
the differences between groups, and the correlation of "had prior art" with each judge dimension."""

import math
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from sqlalchemy.orm import Session

from service.analyses.selection import number
from service.analyses.stats import bootstrap_mean_ci, compare_samples, spearman_rows
from service.judge_scores import DIMENSIONS
from service.prior_art.classes import CLASSES, LEVELS, UNKNOWN, anticipation
from service.prior_art.store import load_prior_art

HAD_PRIOR_ART = "had prior art (a realised match in the look-back window before the cutoff)"


def with_prior_art(session: Session, ideas: pd.DataFrame) -> pd.DataFrame:
    """The ideas with their stored classes (class_realised, class_direction; NaN: scored without prior art)."""
    stored = load_prior_art(session, ideas["score_id"].tolist())
    return ideas.merge(stored, on="score_id", how="left")


def wilson(k: int, n: int, confidence: float) -> list[float] | None:
    """The Wilson score interval of k successes in n (None for n = 0)."""
    if n == 0:
        return None
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return [float(ci.low), float(ci.high)]


def newcombe(k_a: int, n_a: int, k_b: int, n_b: int, confidence: float) -> list[float] | None:
    """The interval of the difference of two rates from their Wilson intervals (Newcombe's hybrid score method)."""
    a, b = wilson(k_a, n_a, confidence), wilson(k_b, n_b, confidence)
    if a is None or b is None:
        return None
    p_a, p_b = k_a / n_a, k_b / n_b
    d = p_a - p_b
    return [d - math.sqrt((p_a - a[0]) ** 2 + (b[1] - p_b) ** 2), d + math.sqrt((a[1] - p_a) ** 2 + (p_b - b[0]) ** 2)]


def anticipation_scores(part: pd.DataFrame, level: str) -> pd.Series:
    """Per idea with a known class: its score when anticipated at the level, else 0."""
    known = part[part[f"class_{level}"].isin(CLASSES)]
    return pd.Series([anticipation(score, cls) for score, cls in zip(known["score"], known[f"class_{level}"])],
                     index=known.index, dtype=float)


def group_prior_art(part: pd.DataFrame, *, level: str, confidence: float, n_resamples: int, seed: int,
                    method: str) -> dict | None:
    """One group's prior-art block (None when none of its ideas was scored with prior art)."""
    computed = part[part["class_realised"].notna()]
    if computed.empty:
        return None
    rates: dict[str, Any] = {}
    for lvl in LEVELS:
        classes = computed[f"class_{lvl}"]
        known = int(classes.isin(CLASSES).sum())
        rates[lvl] = {c: {"n": int((classes == c).sum()), "rate": number((classes == c).sum() / known) if known
                          else None, "ci": wilson(int((classes == c).sum()), known, confidence)} for c in CLASSES}
    anticipation = anticipation_scores(computed, level)
    declared = sorted({d.isoformat() for d in computed["knowledge_cutoff"].dropna()})
    return {
        "ideas": int(len(part)), "scored_with_prior_art": int(len(computed)),
        "known": int(computed["class_realised"].isin(CLASSES).sum()),
        "unknown": int((computed["class_realised"] == UNKNOWN).sum()),
        "without_prior_art": int(len(part) - len(computed)),
        "rates": rates,
        "anticipation_score": number(anticipation.mean()) if len(anticipation) else None,
        "anticipation_ci": bootstrap_mean_ci(anticipation, confidence=confidence, n_resamples=n_resamples,
                                             seed=seed, method=method),
        "lookback_windows": sorted({f"{s.isoformat() if s else '-'}..{e.isoformat()}"
                                    for s, e in zip(computed["lookback_start"], computed["lookback_end"])}),
        "clipped": int(computed["clipped"].astype(bool).sum()),
        "knowledge_cutoffs": declared,
        # ideas with realised prior art the generator could have read, and with some published after its cutoff
        "readable_prior_art": int((computed["n_realised_before_knowledge"].fillna(0) > 0).sum()) if declared else None,
        "later_prior_art": int((computed["n_realised_after_knowledge"].fillna(0) > 0).sum()) if declared else None,
    }


def prior_art_comparisons(frame: pd.DataFrame, *, level: str, confidence: float) -> list[dict]:
    """Per pair of groups: the anticipation score (as the score is compared) and each class rate at the level (the
    same tests on 0/1, and the difference of rates with Newcombe's interval)."""
    out = []
    computed = frame[frame["class_realised"].notna()]
    names = sorted(computed["group"].unique())
    for a, b in combinations(names, 2):
        pa, pb = computed[computed["group"] == a], computed[computed["group"] == b]
        out.append({"a": a, "b": b, "metric": "anticipation", "judge": None, "dimension": None, "level": level,
                    **compare_samples(anticipation_scores(pa, level), anticipation_scores(pb, level))})
        ka, kb = pa[pa[f"class_{level}"].isin(CLASSES)], pb[pb[f"class_{level}"].isin(CLASSES)]
        for c in CLASSES:
            xa, xb = (ka[f"class_{level}"] == c).astype(float), (kb[f"class_{level}"] == c).astype(float)
            ci = newcombe(int(xa.sum()), len(xa), int(xb.sum()), len(xb), confidence)
            out.append({"a": a, "b": b, "metric": f"rate_{c}", "judge": None, "dimension": None, "level": level,
                        **compare_samples(xa, xb),
                        "difference": number(xa.mean() - xb.mean()) if len(xa) and len(xb) else None,
                        "difference_low": ci[0] if ci else None, "difference_high": ci[1] if ci else None})
    return out


def systems_prior_art(session: Session, ideas: pd.DataFrame, *, level: str, confidence: float, n_resamples: int,
                      seed: int, method: str) -> tuple[dict[str, dict | None], list[dict], dict | None]:
    """Per group its prior-art block, the comparisons between groups, and the answer's summary (None when no idea of
    the selection was scored with prior art)."""
    frame = with_prior_art(session, ideas)
    blocks = {name: group_prior_art(part, level=level, confidence=confidence, n_resamples=n_resamples, seed=seed,
                                    method=method) for name, part in frame.groupby("group", sort=True)}
    if all(b is None for b in blocks.values()):
        return blocks, [], None
    unknown = int((frame["class_realised"] == UNKNOWN).sum())
    summary: dict[str, Any] = {
        "classes": list(CLASSES), "levels": list(LEVELS), "level": level, "rate_interval": "wilson",
        "anticipation": "the HindSight score when anticipated, else 0, averaged over the ideas of known class "
                        "(the paper's score, mean_score, is unchanged)",
        "unknown_ideas": unknown, "without_prior_art": int(frame["class_realised"].isna().sum())}
    if unknown:
        summary["warnings"] = [{"code": "prior_art_unknown", "message": (
            f"{unknown} of {len(frame)} ideas have class unknown: their index held no paper in the look-back window "
            "before their cutoff, so they are left out of the class rates, not counted as anticipated")}]
    return blocks, prior_art_comparisons(frame, level=level, confidence=confidence), summary


def prior_art_correlations(session: Session, ideas: pd.DataFrame, judges: pd.DataFrame,
                           confidence: float = 0.95) -> dict | None:
    """Spearman correlation of "had prior art" (1/0; ideas of known class) with each judge dimension, novelty
    first, overall and per group, with the interval the score's rows have."""
    frame = with_prior_art(session, ideas)
    frame = frame[frame["realised_before"].notna() & frame["class_realised"].isin(CLASSES)]
    if frame.empty:
        return None
    frame = frame.assign(had_prior_art=frame["realised_before"].astype(bool).astype(float))
    joined = frame.merge(judges, on="idea_pk")
    order = ["novelty", *[d for d in DIMENSIONS if d != "novelty"]]
    rows = spearman_rows(joined, "had_prior_art", order, confidence=confidence,
                         extra=lambda part: {"had_prior_art": int(part["had_prior_art"].sum())})
    return {"x": HAD_PRIOR_ART, "method": "spearman", "ideas": int(len(frame)),
            "rate": number(np.mean(frame["had_prior_art"])), "rows": rows}
