"""The estimation core: the 95% intervals of labels_only and ppi cover a known truth in 200 seeded simulated draws,
with a predictor that agrees well and with one that is useless; the small-sample fallback; the halving formula."""

import numpy as np
import pytest

from service.labels import ppi


def _population(rng, size: int, rate: float, quality: str) -> tuple[np.ndarray, np.ndarray]:
    y = (rng.random(size) < rate).astype(float)
    if quality == "good":  # the predictor's call agrees with the truth on 90% of ideas
        f = np.where(rng.random(size) < 0.9, y, 1 - y)
    else:  # useless: independent of the truth
        f = (rng.random(size) < 0.4).astype(float)
    return y, f


def _interval(y, f, fu, *, tuned: bool) -> ppi.Estimate:
    check = ppi.small_sample(y, f) if tuned else ppi.small_sample(y)
    pseudo = ppi.PSEUDO_WEIGHT if check["small"] else 0.0
    return ppi.ppi_mean(y, f, fu, lam=None if tuned else 0.0, pseudo=pseudo)


@pytest.mark.parametrize("quality", ["good", "useless"])
@pytest.mark.parametrize("rate,n", [(0.3, 60), (0.08, 25)])
def test_intervals_cover_the_truth_in_200_draws(quality, rate, n):
    covered = {"labels_only": 0, "ppi": 0, "difference": 0}
    widths: dict[str, list[float]] = {"labels_only": [], "ppi": []}
    for draw in range(200):
        rng = np.random.default_rng(1000 * draw + 7)
        ya, fa = _population(rng, 150, rate, quality)
        yb, fb = _population(rng, 150, rate / 2, quality)
        la, lb = rng.permutation(150), rng.permutation(150)
        est = {}
        for name, y, f, order in (("a", ya, fa, la), ("b", yb, fb, lb)):
            lab, unl = order[:n], order[n:]
            est[name] = {"labels_only": _interval(y[lab], f[lab], f[unl], tuned=False),
                         "ppi": _interval(y[lab], f[lab], f[unl], tuned=True)}
        for kind in ("labels_only", "ppi"):
            e = est["a"][kind]
            covered[kind] += e.ci[0] <= ya.mean() <= e.ci[1]
            widths[kind].append(e.ci[1] - e.ci[0])
        d = ppi.difference(est["a"]["ppi"], est["b"]["ppi"])
        covered["difference"] += d.ci[0] <= ya.mean() - yb.mean() <= d.ci[1]
    assert min(covered.values()) >= 180, covered  # at least 90% of 200
    mean_lab, mean_ppi = np.mean(widths["labels_only"]), np.mean(widths["ppi"])
    if quality == "good":
        assert mean_ppi < 0.9 * mean_lab, (mean_ppi, mean_lab)
    else:
        assert mean_ppi <= 1.01 * mean_lab, (mean_ppi, mean_lab)


def test_lambda_zero_is_the_labelled_sample_alone():
    y = np.array([1, 0, 0, 1, 1, 0, 0, 0, 1, 0] * 3, dtype=float)
    e = ppi.ppi_mean(y, np.ones_like(y), np.zeros(50), lam=0.0)
    se = y.std(ddof=1) / np.sqrt(y.size)
    assert e.value == pytest.approx(y.mean())
    assert e.ci == pytest.approx([y.mean() - 1.959964 * se, y.mean() + 1.959964 * se], abs=1e-5)
    assert e.lam == 0.0 and e.method == "normal"


def test_power_tuning_uses_a_perfect_predictor_fully():
    rng = np.random.default_rng(0)
    y = (rng.random(40) < 0.4).astype(float)
    fu = (rng.random(400) < 0.4).astype(float)
    e = ppi.ppi_mean(y, y, fu)
    assert e.lam == pytest.approx(1 / (1 + 40 / 400), rel=0.05)
    assert e.ci[1] - e.ci[0] < ppi.ppi_mean(y, y, fu, lam=0.0).ci[1] - ppi.ppi_mean(y, y, fu, lam=0.0).ci[0]


def test_a_sample_with_no_positive_is_small_and_its_fallback_interval_is_not_a_point():
    y = np.zeros(25)
    check = ppi.small_sample(y, np.zeros(25))
    assert check["small"] and check["positives"] == 0
    plain = ppi.ppi_mean(y, np.zeros(25), np.zeros(80), lam=0.0)
    assert plain.ci == [0.0, 0.0]  # what a normal interval says: certainty it does not have
    fallback = ppi.ppi_mean(y, np.zeros(25), np.zeros(80), lam=0.0, pseudo=ppi.PSEUDO_WEIGHT)
    assert fallback.method == "pseudo_counts"
    assert fallback.ci[1] > 0.05  # three positives in a hundred would give no positive in 25 labels half the time
    assert not ppi.small_sample(np.array([1.0] * 12 + [0.0] * 12))["small"]


def test_labels_to_halve():
    # a useless predictor: four times the labels, so three times more
    assert ppi.labels_to_halve(25, 100_000, 0.0) == pytest.approx(75, abs=1)
    # a pool too small to reach it
    assert ppi.labels_to_halve(25, 40, 0.0) is None
    # a large pool: the interval scales as 1/sqrt(n) whatever the predictor, so 3n more
    assert ppi.labels_to_halve(25, 100_000, 0.8) == pytest.approx(75, abs=1)
    # a pool of 225 ideas: labels alone halve at 100 labelled; a good predictor already narrowed the interval with
    # the unlabelled ideas, and labelling them takes that away: no number of labels halves it
    assert ppi.labels_to_halve(25, 200, 0.0) == pytest.approx(75, abs=1)
    assert ppi.labels_to_halve(25, 200, 0.8) is None


def test_difference_of_independent_estimates():
    a = ppi.Estimate(0.5, [0.4, 0.6], 0.05, 0.0, "normal")
    b = ppi.Estimate(0.2, [0.1, 0.3], 0.05, 0.0, "pseudo_counts")
    d = ppi.difference(a, b)
    assert d.value == pytest.approx(0.3)
    assert d.se == pytest.approx(np.hypot(0.05, 0.05))
    assert d.method == "pseudo_counts"


def test_clipped_keeps_the_estimate_and_cuts_the_interval():
    e = ppi.clipped(ppi.Estimate(0.02, [-0.03, 0.07], 0.025, 0.0, "normal"), 0.0, 1.0)
    assert e.value == 0.02 and e.ci == [0.0, 0.07] and e.se == 0.025


def test_the_value_is_the_plain_estimate_and_the_pseudo_counts_move_only_the_interval():
    # issue 42: 0 positives of 3 showed 0.200, 16 of 25 showed 0.630
    none = ppi.clipped(ppi.ppi_mean(np.zeros(3), np.zeros(3), np.zeros(40), lam=0.0, pseudo=ppi.PSEUDO_WEIGHT),
                       0.0, 1.0)
    assert none.value == 0.0 and none.method == "pseudo_counts"
    assert none.ci[0] == 0.0 and none.ci[1] > 0.3  # not degenerate
    assert none.as_dict()["ci_center"] == pytest.approx(0.2) and "Agresti-Min" in none.as_dict()["interval"]
    y = np.array([1.0] * 16 + [0.0] * 9)
    some = ppi.ppi_mean(y, y, np.zeros(100), lam=0.0, pseudo=ppi.PSEUDO_WEIGHT)
    assert some.value == pytest.approx(0.64) and some.ci[0] < 0.64 < some.ci[1]
    assert some.center == pytest.approx(17 / 27)
    # one label: the adjusted centre must not put the interval beside the value it belongs to
    one = ppi.ppi_mean([1.0], [1.0], np.zeros(10), lam=0.0, pseudo=ppi.PSEUDO_WEIGHT)
    assert one.value == 1.0 and one.ci[0] <= 1.0 <= one.ci[1]
    # differences keep both: the plain difference, the interval around the adjusted one
    d = ppi.difference(some, none)
    assert d.value == pytest.approx(0.64) and d.center == pytest.approx(17 / 27 - 0.2)
