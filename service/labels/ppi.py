"""Prediction-powered estimates (PPI++, power-tuned) of a mean and of a difference of two, and the labelled sample
alone beside them; a small-sample fallback with pseudo-observations (Agresti-Min for the paired residual)."""

from dataclasses import dataclass

import numpy as np
from scipy import stats

# few labelled positives (or negatives, or predictor misses) make the normal interval too narrow below this count
SMALL_COUNT = 10
# the fallback's weight per pseudo-cell (y, f) in {0, 1}^2: Agresti and Min's 0.5, one pseudo-success and one
# pseudo-failure in all; at lambda = 0 it is the add-one-each interval of a proportion (Agresti-Caffo per group)
PSEUDO_WEIGHT = 0.5
METHODS = {
    "normal": "normal interval around the estimate",
    "pseudo_counts": "few labels: the value is the plain estimate; the interval adds one pseudo-success and one "
                     "pseudo-failure (Agresti-Min) and is centred on the adjusted estimate",
}


@dataclass(frozen=True)
class Estimate:
    """A point estimate, its interval and standard error, the power-tuning weight and how the interval was made."""

    value: float | None  # the plain estimate, never moved by pseudo-observations
    ci: list[float] | None
    se: float | None
    lam: float | None
    method: str  # "normal", or "pseudo_counts" (the small-sample fallback: the interval only)
    center: float | None = None  # where the interval is centred when it is not the value (pseudo_counts)

    def as_dict(self) -> dict:
        return {"value": self.value, "ci": self.ci, "se": self.se, "lambda": self.lam, "method": self.method,
                "interval": METHODS[self.method], "ci_center": self.middle}

    @property
    def middle(self) -> float | None:
        return self.value if self.center is None else self.center


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2))


def _weighted(y: np.ndarray, f: np.ndarray, pseudo: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The labelled pairs with four pseudo-cells (y, f) in {0, 1}^2 of weight `pseudo` each (none when 0)."""
    w = np.ones(y.size)
    if pseudo > 0:
        y = np.concatenate([y, [1.0, 1.0, 0.0, 0.0]])
        f = np.concatenate([f, [1.0, 0.0, 1.0, 0.0]])
        w = np.concatenate([w, np.full(4, pseudo)])
    return y, f, w


def _mean_var(x: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Weighted mean and the unbiased-by-count variance (ddof 1 on the total weight)."""
    total = w.sum()
    mean = float((w * x).sum() / total)
    return mean, float((w * (x - mean) ** 2).sum() / max(total - 1.0, 1.0))


def tuned_lambda(y: np.ndarray, f: np.ndarray, w: np.ndarray, f_unlabelled: np.ndarray) -> float:
    """PPI++'s variance-minimising weight cov(y, f) / ((1 + n/N) var(f)), clipped to [0, 1] (0: labels alone)."""
    n, big_n = w.sum(), f_unlabelled.size
    if big_n == 0:
        return 0.0
    my, mf = (w * y).sum() / n, (w * f).sum() / n
    cov = float((w * (y - my) * (f - mf)).sum() / max(n - 1.0, 1.0))
    everything = np.concatenate([f, f_unlabelled])
    weights = np.concatenate([w, np.ones(big_n)])
    _, var_f = _mean_var(everything, weights)
    if var_f <= 0:
        return 0.0
    return float(np.clip(cov / ((1.0 + n / big_n) * var_f), 0.0, 1.0))


def ppi_mean(y, f_labelled, f_unlabelled, *, confidence: float = 0.95, lam: float | None = None,
             pseudo: float = 0.0) -> Estimate:
    """theta = lam * mean(f over the unlabelled) + mean(y - lam * f over the labelled); lam None: power-tuned.
    lam = 0 is the labelled sample alone; `pseudo` > 0 adds the fallback's pseudo-cells to the labelled pairs."""
    y0, f0, fu = (np.asarray(a, dtype=float) for a in (y, f_labelled, f_unlabelled))
    if y0.size == 0:
        return Estimate(None, None, None, None, "normal")
    y1, f1, w = _weighted(y0, f0, pseudo)
    # lambda from the real pairs only: the pseudo-cells widen the interval, they must not make a constant predictor
    # look informative
    lam = tuned_lambda(y0, f0, np.ones(y0.size), fu) if lam is None else float(lam)
    if fu.size == 0:
        lam = 0.0
    shift = lam * float(fu.mean()) if lam else 0.0
    value = float((y0 - lam * f0).mean()) + shift  # the plain estimate: the pseudo-cells only move the interval
    residual_mean, residual_var = _mean_var(y1 - lam * f1, w)
    center = residual_mean + shift
    var = residual_var / w.sum()
    if lam and fu.size > 1:
        var += lam ** 2 * float(fu.var(ddof=1)) / fu.size
    se = float(np.sqrt(var))
    half = _z(confidence) * se
    if pseudo > 0:  # widened to hold the value where the adjusted centre moved it out (one or two labels)
        return Estimate(value, [min(center - half, value), max(center + half, value)], se, lam, "pseudo_counts",
                        center)
    return Estimate(value, [value - half, value + half], se, lam, "normal")


def clipped(e: Estimate, low: float, high: float) -> Estimate:
    """The interval cut to the values the quantity can take (a rate in [0, 1]); coverage is unchanged."""
    if e.ci is None:
        return e
    return Estimate(e.value, [max(e.ci[0], low), min(e.ci[1], high)], e.se, e.lam, e.method, e.center)


def small_sample(y, f_labelled=None, *, at: int = SMALL_COUNT) -> dict:
    """Whether the labelled sample is too thin for a normal interval: fewer than `at` labelled positives (y > 0) or
    negatives, or (with a predictor) fewer than `at` labelled ideas where the predictor's call (f >= 0.5) misses."""
    y = np.asarray(y, dtype=float)
    positives = int((y > 0).sum())
    counts = {"positives": positives, "negatives": int(y.size - positives)}
    if f_labelled is not None:
        f = np.asarray(f_labelled, dtype=float)
        counts["predictor_misses"] = int(((y > 0) != (f >= 0.5)).sum())
    return {"small": bool(min(counts.values()) < at), **counts}


def difference(a: Estimate, b: Estimate, *, confidence: float = 0.95) -> Estimate:
    """a - b of two independent estimates (separate strata), with the normal interval of their summed variance."""
    if a.value is None or b.value is None or a.se is None or b.se is None:
        return Estimate(None, None, None, None, "normal")
    value = a.value - b.value
    center = float(a.middle) - float(b.middle)  # type: ignore[arg-type]
    se = float(np.hypot(a.se, b.se))
    half = _z(confidence) * se
    if "pseudo_counts" in (a.method, b.method):
        return Estimate(value, [center - half, center + half], se, None, "pseudo_counts", center)
    return Estimate(value, [value - half, value + half], se, None, "normal")


def labels_to_halve(n_labelled: int, n_unlabelled: int, rho2: float) -> int | None:
    """More labels that would halve the PPI interval, from its variance
    sigma_y^2 (1 - rho^2 N / (n + N)) / n at the power-tuned lambda (rho: the predictor's correlation with the
    labels): the n' with var(n') = var(n) / 4, found by bisection; None when no number of labels does it."""
    if n_labelled <= 0:
        return None
    total = n_labelled + n_unlabelled

    def var(n: float) -> float:  # the pool of ideas is fixed: labelling more leaves fewer unlabelled
        unl = max(total - n, 0.0)
        return (1.0 - (rho2 * unl / (n + unl) if unl > 0 else 0.0)) / n

    target = var(n_labelled) / 4.0
    if var(total) > target:
        return None
    lo, hi = float(n_labelled), float(total)
    while hi - lo > 0.5:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if var(mid) > target else (lo, mid)
    return int(np.ceil(hi)) - n_labelled
