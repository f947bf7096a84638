"""The impact formula and idea score, against hand computation."""

import numpy as np
import pytest

from indexing.impact import impact, is_top_venue, normalised_citations, top_venue_keys
from indexing.matcher.decide import Decision
from indexing.windows import Window, WindowImpact
from service.matching import idea_score


def score_vectors(hits: list[tuple[dict, float]], theta: float):
    """The dense rule (cosine >= theta) on these hits, shaped as the answer: (idea score, matches)."""
    sims = np.array([s for _, s in hits], dtype=np.float64)
    impacts = np.array([p["impact"] for p, _ in hits], dtype=np.float64)
    window = WindowImpact(Window(None, None, 0, len(hits)), impacts, impacts, {})  # type: ignore[arg-type]
    out = idea_score("i", Decision(positions=list(range(len(hits))), similarity=sims, realised=sims >= theta),
                     rows=[p for p, _ in hits], impacts=window)
    return out.score, out.matches


def paper(pid: str, impact_value: float) -> dict:
    return {"paper_id": pid, "title": pid, "venue": None, "year": 2024, "citations": 0, "impact": impact_value}


def test_min_max_and_weights_by_hand():
    c_hat, lo, hi = normalised_citations([10, 60, 110])
    assert (lo, hi) == (10, 110)
    assert c_hat == [0.0, 0.5, 1.0]
    assert impact(0.5, True) == pytest.approx(0.6 * 0.5 + 0.4)
    assert impact(1.0, False) == pytest.approx(0.6)
    assert impact(0.0, False) == 0.0


def test_missing_citations_count_as_zero():
    c_hat, lo, hi = normalised_citations([None, 50, 100])
    assert (lo, hi) == (0, 100)
    assert c_hat == [0.0, 0.5, 1.0]


def test_min_equal_max_gives_zero():
    assert normalised_citations([7, 7, 7])[0] == [0.0, 0.0, 0.0]
    assert normalised_citations([None, None])[0] == [0.0, 0.0]


def test_log1p_transform():
    import math

    c_hat, lo, hi = normalised_citations([0, math.e - 1, math.e ** 2 - 1], "log1p")
    assert c_hat == pytest.approx([0.0, 0.5, 1.0])


def test_top_venue_matching():
    keys = top_venue_keys(["NeurIPS", "ICLR"])
    assert is_top_venue("NeurIPS 2024", keys)
    assert is_top_venue("Advances in Neural Information Processing Systems", keys)
    assert is_top_venue("ICLR", keys)
    assert not is_top_venue("ICLR 2024 Workshop on Reasoning", keys)
    assert not is_top_venue(None, keys)


def test_idea_score_is_max_impact_over_matches_at_or_above_theta():
    hits = [(paper("a", 0.3), 0.97), (paper("b", 0.9), 0.96), (paper("c", 1.0), 0.959999)]
    score, matches = score_vectors(hits, theta=0.96)
    assert score == 0.9  # "b" sits exactly at theta and counts; "c" just below does not
    assert [m.above_threshold for m in matches] == [True, True, False]


def test_no_match_scores_zero():
    score, matches = score_vectors([(paper("a", 1.0), 0.5)], theta=0.96)
    assert score == 0.0 and not matches[0].above_threshold
    assert score_vectors([], theta=0.96)[0] == 0.0
