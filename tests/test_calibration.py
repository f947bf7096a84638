"""Calibration: the curve and the pick on constructed similarities, the null distribution, the theta registry."""

import json

import numpy as np
import pytest

from indexing import calibration as cal
from indexing.embedders import thetas
from indexing.settings import Settings

# Four ideas, one positive each. Positive cosines 0.9, 0.8, 0.7 and one positive outside the top-k;
# negatives at 0.85, 0.6, 0.5, 0.4.
POSITIVES = [{"a"}, {"b"}, {"c"}, {"d"}]
HITS = [
    [("a", 0.9), ("x", 0.5)],
    [("y", 0.85), ("b", 0.8)],
    [("c", 0.7), ("z", 0.6)],
    [("w", 0.4)],  # "d" was not retrieved
]


def point(curve, theta):
    return next(p for p in curve if abs(p.theta - theta) < 1e-9)


def test_curve_counts_at_known_thetas():
    curve = cal.pr_curve(POSITIVES, HITS, [0.3, 0.65, 0.75, 0.82, 0.88, 0.95])
    p = point(curve, 0.3)  # everything retrieved is matched: 3 tp, 4 fp, the unretrieved positive is a fn
    assert (p.tp, p.fp, p.fn) == (3, 4, 1)
    assert p.precision == pytest.approx(3 / 7) and p.recall == pytest.approx(0.75)
    assert p.ideas_matched == 1.0
    p = point(curve, 0.65)
    assert (p.tp, p.fp, p.fn) == (3, 1, 1) and p.precision == pytest.approx(0.75)
    assert p.f1 == pytest.approx(2 * 0.75 * 0.75 / 1.5)
    p = point(curve, 0.82)
    assert (p.tp, p.fp) == (1, 1) and p.ideas_matched == 0.5
    p = point(curve, 0.88)
    assert (p.tp, p.fp, p.precision, p.recall) == (1, 0, 1.0, 0.25)
    p = point(curve, 0.95)  # nothing matched: precision 1 by convention, recall 0
    assert (p.tp, p.fp, p.precision, p.recall, p.ideas_matched) == (0, 0, 1.0, 0.0, 0.0)


def test_pick_is_highest_recall_at_target_precision():
    curve = cal.pr_curve(POSITIVES, HITS, cal.theta_grid(0.0, 1.0, 0.01))
    pick = cal.pick_theta(curve, 0.75)
    assert pick.theta == pytest.approx(0.61) and pick.recall == pytest.approx(0.75)  # just above the 0.6 negative
    pick = cal.pick_theta(curve, 0.9)  # only above the 0.85 negative is precision perfect
    assert pick.theta == pytest.approx(0.86) and pick.precision == 1.0 and pick.recall == pytest.approx(0.25)
    assert cal.pick_theta(cal.pr_curve([{"a"}], [[("x", 0.9)]], [0.5, 0.95]), 0.9) is None


def test_exact_pick_uses_every_cosine():
    exact = cal.exact_pick(POSITIVES, HITS, 0.75)
    assert exact["theta"] == pytest.approx(0.7) and exact["recall"] == pytest.approx(0.75)
    assert exact["precision"] == pytest.approx(0.75)
    assert 0 < exact["average_precision"] < 1


def test_curve_monotone_recall_on_random_data():
    rng = np.random.default_rng(0)
    positives = [{f"p{i}"} for i in range(200)]
    hits = [sorted([(f"p{i}", float(rng.normal(0.7, 0.1)))] + [(f"n{i}-{j}", float(rng.normal(0.3, 0.1)))
                                                               for j in range(5)], key=lambda h: -h[1])
            for i in range(200)]
    curve = cal.pr_curve(positives, hits)
    recalls = [p.recall for p in curve]
    assert all(a >= b for a, b in zip(recalls, recalls[1:]))
    assert all(p.tp + p.fn == 200 for p in curve)
    pick = cal.pick_theta(curve, 0.95)
    assert 0.4 < pick.theta < 0.6 and pick.precision >= 0.95


def test_null_cosines_exclude_positives_and_percentiles():
    ideas = np.eye(3, dtype=np.float32)
    papers = np.eye(3, dtype=np.float32)
    null = cal.null_cosines(ideas, papers, [{0}, {1}, {2}])
    assert len(null) == 6 and np.all(null == 0.0)  # the diagonal (positives) is left out
    cosines = np.linspace(0.0, 1.0, 1001)
    assert cal.null_percentile(cosines, 0.5) == pytest.approx(50.0, abs=0.1)
    assert cal.null_percentile(cosines, 1.5) == 100.0
    assert cal.theta_at_null_percentile(cosines, 99.0) == pytest.approx(0.99)
    summary = cal.null_summary(cosines, [0.75])
    assert summary["n_pairs"] == 1001 and summary["quantiles"]["median"] == pytest.approx(0.5)
    assert summary["theta_percentiles"]["0.75"] == pytest.approx(75.0, abs=0.1)


def test_null_sample_is_bounded():
    rng = np.random.default_rng(1)
    vecs = rng.standard_normal((50, 8)).astype(np.float32)
    null = cal.null_cosines(vecs, vecs, [{i} for i in range(50)], sample=500)
    assert 300 < len(null) < 700


def test_evaluate_retrieval_denominators():
    hits = [[("a", 0.9), ("b", 0.5)], [("x", 0.8), ("c", 0.7)], [("y", 0.6)], [("z", 0.8)], [("q", 0.3)]]
    out = cal.evaluate_retrieval(["a", "c", "d", None, None], hits, theta=0.75, ks=(1, 5))
    assert out["with_source"] == 3 and out["without_source"] == 2
    assert out["recall@1"] == pytest.approx(1 / 3) and out["recall@5"] == pytest.approx(2 / 3)
    assert out["source_matched_rate"] == pytest.approx(1 / 3)  # "c" is retrieved but below theta
    assert out["source_not_in_top_k"] == 1
    assert out["false_match_rate"] == pytest.approx(0.5) and out["false_matches"] == 1


def test_registry_write_read_and_user_overrides_shipped(tmp_path):
    shipped = thetas.read_registry(thetas.SHIPPED)
    assert shipped["minilm"]["theta"] == pytest.approx(__import__("indexing.embedders.minilm",
                                                                  fromlist=["x"]).MINILM_THETA)
    home = tmp_path / "home"
    assert thetas.registry_theta("minilm", home=home) == shipped["minilm"]["theta"]
    assert thetas.registry_theta("specter2", home=home) is None
    thetas.write_entry(thetas.user_registry(home), "minilm", {"theta": 0.71, "precision": 0.9})
    thetas.write_entry(thetas.user_registry(home), "specter2", {"theta": 0.95})
    assert thetas.registry_theta("minilm", home=home) == 0.71
    assert thetas.registry_theta("specter2", home=home) == 0.95
    data = json.loads(thetas.user_registry(home).read_text())
    assert set(data["models"]) == {"minilm", "specter2"} and "written" in data["models"]["minilm"]
    thetas.user_registry(home).write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        thetas.registry_theta("minilm", home=home)


def test_load_embedder_consults_registry(tmp_path, monkeypatch):
    import indexing.embedders.minilm as minilm
    from indexing.embedders import load_embedder

    class Fake:
        def __init__(self, *, theta=None, **kwargs):
            self.theta = minilm.MINILM_THETA if theta is None else theta

    monkeypatch.setattr(minilm, "MiniLMEmbedder", Fake)
    settings = Settings(home=tmp_path / "home")  # check=False: the fake has no vectors to check
    assert load_embedder("minilm", settings, check=False).theta == thetas.registry_theta("minilm")
    thetas.write_entry(thetas.user_registry(settings.home), "minilm", {"theta": 0.66})
    assert load_embedder("minilm", settings, check=False).theta == 0.66
    assert load_embedder("minilm", settings, theta=0.5, check=False).theta == 0.5  # an explicit theta wins
