"""Plot titles name the matcher the scores were made with and its thresholds (theta decides nothing on hybrid)."""

import matplotlib
import numpy as np
import pandas as pd
import pytest

from service import plots
from service.runs import matcher_label

HYBRID = {"realised": {"facets": 0.5, "text": 0.613112}, "direction": {"facets": 0.5, "text": 0.5}}


@pytest.fixture(autouse=True)
def svg_text():
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # titles as <text>, so the test can read them
        yield


def test_matcher_label_names_the_rule_that_decided():
    assert matcher_label("hybrid", "hybrid-1", HYBRID) == \
        "hybrid matcher hybrid-1: p realised ≥ facets 0.50/text 0.61, p direction ≥ facets 0.50/text 0.50"
    assert matcher_label("dense", None, {"theta": 0.75}) == "dense matcher: cosine ≥ θ 0.75"
    # a matcher that realises by same problem and same method: its two thresholds, not an empty realised one
    both = {"direction": {"facets": 0.52, "text": 0.6}, "method": {"facets": 0.31, "text": 0.45}}
    assert matcher_label("hybrid", "hybrid-2", both) == "hybrid matcher hybrid-2: p direction ≥ facets " \
        "0.52/text 0.60, p method ≥ facets 0.31/text 0.45 (realised: both)"


def test_cutoff_plot_title_names_the_hybrid_thresholds_not_theta():
    group = {"group": "g", "mean_score": 0.2, "ci": [0.1, 0.3], "match_rate": 0.5, "leak_risk": False}
    answer = {"cutoffs": [{"cutoff": "2024-06-01", "papers": 10, "groups": [group]}], "until": "2025-12-31",
              "index_version": "v0001", "model": "minilm", "theta": 0.75, "matcher": "hybrid",
              "matcher_version": "hybrid-1", "thresholds": HYBRID}
    svg = plots.cutoff_plot(answer, fmt="svg").decode()
    assert "hybrid matcher hybrid-1: p realised ≥ facets 0.50/text 0.61" in svg and "theta 0.75" not in svg


def test_distribution_and_quadrant_titles_carry_the_matchers():
    ideas = pd.DataFrame({"group": ["a", "a", "b"], "score": [0.1, 0.0, 0.3], "matched": [True, False, True]})
    svg = plots.distribution_plot(ideas, fmt="svg", matchers=["dense matcher: cosine ≥ θ 0.75"]).decode()
    assert "dense matcher: cosine ≥ θ 0.75" in svg
    frame = pd.DataFrame({"group": ["a"] * 4, "score": [0.0, 0.2, 0.4, 0.0], "matched": [False, True, True, False],
                          "judge_value": np.array([3.0, 8.0, 4.0, 9.0]),
                          "quadrant": ["true_negative", "true_positive", "hidden_gem", "overhyped"]})
    share = {"count": 1, "share": 0.25}
    answer = {"cuts": {"hindsight": {"kind": "matched", "value": None}, "judge": {"kind": "median", "value": 5.5}},
              "judge": "ai-scientist-self", "dimension": "novelty",
              "counts": [{"group": g, **{q: share for q in plots.QUADRANTS}} for g in ("a", "all")]}
    svg = plots.quadrant_plot(frame, answer, fmt="svg", matchers=[matcher_label("hybrid", "h2", HYBRID)]).decode()
    assert "hybrid matcher h2" in svg
