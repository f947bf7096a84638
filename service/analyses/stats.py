"""The statistics the analyses share: a bootstrap interval of the mean, two-sample comparisons, Spearman's rho with
its interval."""

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from service.analyses.selection import finite, number


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


def spearman(x, y, confidence: float = 0.95) -> dict:
    """rho, p and a confidence interval over the pairs where both values are present; None below 3 pairs or for a
    constant side. The interval is Fisher's z with the Bonett-Wright variance (1 + rho^2/2) / (n - 3), from 4 pairs."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    out: dict[str, Any] = {"n": int(x.size), "rho": None, "p": None, "ci": None}
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.spearmanr(x, y)
    out.update(rho=number(res.statistic), p=number(res.pvalue))
    rho = out["rho"]
    if rho is not None and x.size > 3 and abs(rho) < 1:
        half = stats.norm.ppf(0.5 + confidence / 2) * np.sqrt((1 + rho ** 2 / 2) / (x.size - 3))
        out["ci"] = [number(np.tanh(np.arctanh(rho) - half)), number(np.tanh(np.arctanh(rho) + half))]
    return out


def spearman_rows(joined, x: str, dimensions: Sequence[str], *, confidence: float = 0.95,
                  extra: Callable[[Any], dict] | None = None) -> list[dict]:
    """One Spearman row of column x against each judge dimension that judge rated, per (judge, scope), scope being
    "all" or a group; extra(part) adds columns before n, rho, p and ci."""
    rows = []
    for name in sorted(joined["judge"].unique()):
        by_judge = joined[joined["judge"] == name]
        scopes = [("all", by_judge)] + [(g, part) for g, part in by_judge.groupby("group", sort=True)]
        for dim in dimensions:
            if by_judge[dim].notna().sum() == 0:
                continue
            for scope, part in scopes:
                rows.append({"scope": scope, "judge": name, "dimension": dim, **(extra(part) if extra else {}),
                             **spearman(part[x], part[dim], confidence=confidence)})
    return rows
