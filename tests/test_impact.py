"""The impact formula and idea score, against hand computation: h(p) = 0.6 * c_hat(p) + 0.4 * v(p) over a window."""

import math
from datetime import date

import numpy as np
import pytest

from indexing.impact import is_top_venue, top_venue_keys
from indexing.matcher.decide import Decision
from indexing.windows import PaperTable, Window, WindowImpact
from service.scoring.answer import idea_score


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


def impacts(citations: list[int | None], top: list[bool] | None = None, **table) -> tuple[list, list, dict]:
    """c_hat, impact and stats of one window holding these papers (dated in order, all in 2024H1)."""
    flags = top or [False] * len(citations)
    rows = [{"publication_date": f"2024-01-{i + 1:02d}", "citations": c, "top_venue": flags[i]}
            for i, c in enumerate(citations)]
    window = Window(date(2024, 1, 1), date(2024, 1, 31), 0, len(rows))
    got = PaperTable.of(rows, **table).impacts(window)
    return got.c_hat.tolist(), got.impact.tolist(), got.stats


def test_min_max_and_weights_by_hand():
    c_hat, impact, stats = impacts([10, 60, 110], top=[True, False, False])
    assert (stats["citation_min"], stats["citation_max"]) == (10, 110)
    assert c_hat == [0.0, 0.5, 1.0]
    assert impact == pytest.approx([0.4, 0.6 * 0.5, 0.6])


def test_the_weights_are_the_tables():
    _, impact, _ = impacts([0, 100], top=[True, True], citation_weight=0.5, venue_weight=0.5)
    assert impact == pytest.approx([0.5, 1.0])


def test_missing_citations_count_as_zero():
    c_hat, _, stats = impacts([None, 50, 100])
    assert (stats["citation_min"], stats["citation_max"]) == (0, 100)
    assert c_hat == [0.0, 0.5, 1.0]


def test_min_equal_max_gives_zero():
    assert impacts([7, 7, 7])[0] == [0.0, 0.0, 0.0]
    assert impacts([None, None])[0] == [0.0, 0.0]


def test_log1p_transform():
    c_hat, _, _ = impacts([0, math.e - 1, math.e ** 2 - 1], transform="log1p")
    assert c_hat == pytest.approx([0.0, 0.5, 1.0])


def test_cohort_normalisation_is_min_max_within_each_half_year():
    rows = [{"publication_date": d, "citations": c} for d, c in
            [("2024-01-10", 0), ("2024-03-01", 10), ("2024-07-01", 100), ("2024-12-01", 300)]]
    got = PaperTable.of(rows, normalisation="cohort").impacts(Window(date(2024, 1, 1), date(2024, 12, 31), 0, 4))
    assert got.c_hat.tolist() == [0.0, 1.0, 0.0, 1.0]
    assert got.stats["cohorts"]["2024H2"] == {"citation_min": 100, "citation_max": 300, "papers": 2}


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
