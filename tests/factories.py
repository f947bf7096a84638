"""A constructed store for the analysis tests: two systems with planted quadrant memberships."""

from datetime import date
from pathlib import Path

import numpy as np

from indexing.db import migrate, session_scope
from indexing.models import Idea, JudgeScore, Match, Run, Score

# per system: how many ideas are planted in each quadrant (default cuts: matched, judge median)
PLANTED = {
    "sys-a": {"true_positive": 5, "hidden_gem": 4, "overhyped": 1, "true_negative": 2},
    "sys-b": {"true_positive": 2, "hidden_gem": 2, "overhyped": 4, "true_negative": 4},
}
HIGH_JUDGE = (8.0, 8.5, 9.0, 9.5)  # all above the pooled median 7
LOW_JUDGE = (4.0, 5.0, 5.5, 6.0)
JUDGE_MEDIAN = 7.0


def build(home: Path, *, seed: int = 7) -> list[dict]:
    """Write runs, ideas, scores, matches and two judges' scores; return the planted rows."""
    rng = np.random.default_rng(seed)
    db_path = home / "hindsight.db"
    migrate(db_path)
    planted: list[dict] = []
    with session_scope(db_path) as session:
        for system, quads in PLANTED.items():
            run = Run(system=system, label="r1")
            session.add(run)
            session.flush()
            n = 0
            for quadrant, count in quads.items():
                high_hs = quadrant in ("true_positive", "hidden_gem")
                high_j = quadrant in ("true_positive", "overhyped")
                for _ in range(count):
                    n += 1
                    idea_id = f"{system}-{n:02d}"
                    score = round(float(rng.uniform(0.05, 0.95)), 4) if high_hs else 0.0
                    overall = float(rng.choice(HIGH_JUDGE if high_j else LOW_JUDGE))
                    novelty = round(float(rng.uniform(1, 10)), 2)
                    planted.append(_add_idea(session, run, idea_id, score, high_hs, overall, novelty, rng))
        # one idea the judge never saw and one idea that was never scored: counted, never silently dropped
        run_b = session.query(Run).filter_by(system="sys-b").one()
        planted.append(_add_idea(session, run_b, "sys-b-unjudged", 0.4, True, None, None, rng))
        session.add(Idea(run_id=run_b.id, idea_id="sys-b-unscored", problem="p", method="m"))
    return planted


def _add_idea(session, run, idea_id, score, matched, overall, novelty, rng) -> dict:
    idea = Idea(run_id=run.id, idea_id=idea_id, problem=f"problem of {idea_id}", method=f"method of {idea_id}")
    session.add(idea)
    session.flush()
    s = Score(idea_pk=idea.pk, score=score, matched=matched, model="test-model", theta=0.5, index_version="v1",
              cutoff=date(2023, 6, 1), window_end=date(2025, 12, 31), top_k=3)
    session.add(s)
    session.flush()
    best_title = None
    if matched:
        # the best match is the matched paper of highest impact, not the most similar one
        session.add(Match(score_id=s.id, rank=1, paper_id=f"{idea_id}-p1", title=f"Near {idea_id}", venue="ICLR",
                          year=2024, citations=3, similarity=0.9, impact=score / 2, above_threshold=True))
        session.add(Match(score_id=s.id, rank=2, paper_id=f"{idea_id}-p2", title=f"Best {idea_id}", venue="ICML",
                          year=2024, citations=50, similarity=0.7, impact=score, above_threshold=True))
        best_title = f"Best {idea_id}"
    else:
        session.add(Match(score_id=s.id, rank=1, paper_id=f"{idea_id}-p1", title=f"Nearest {idea_id}", venue=None,
                          year=2024, citations=None, similarity=0.45, impact=0.3, above_threshold=False))
        best_title = f"Nearest {idea_id}"
    if overall is not None:
        session.add(JudgeScore(idea_pk=idea.pk, judge="judge-1", overall=overall, novelty=novelty))
        # a second judge on the same ideas, so the judge choice matters
        session.add(JudgeScore(idea_pk=idea.pk, judge="judge-2", overall=float(rng.integers(1, 11))))
    return {"system": run.system, "run": run.label, "idea_id": idea_id, "idea_pk": idea.pk, "score": score,
            "matched": matched, "overall": overall, "novelty": novelty, "best_title": best_title}
