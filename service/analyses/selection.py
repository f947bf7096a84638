"""Which scored ideas an analysis reads, and their judge scores, as pandas frames."""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from indexing.models import Idea, JudgeScore, Match, Run, Score
from service.judges import DIMENSIONS

GROUP_BY = ("system", "run")
LEVELS = ("realised", "direction")


class AnalysisError(ValueError):
    """Bad analysis parameters or an empty selection; names the parameter at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Selection:
    """Runs (ids) and systems to include (empty = all), how ideas are grouped, and which decision level the
    HindSight score means: `realised` (the score) or `direction` (the hybrid matcher's direction score; a score
    stored by the dense matcher has no direction level and keeps its score)."""

    runs: tuple[int, ...] = ()
    systems: tuple[str, ...] = ()
    group_by: str = "system"
    level: str = "realised"

    def as_dict(self) -> dict:
        return {"runs": list(self.runs), "systems": list(self.systems), "group_by": self.group_by,
                "level": self.level}


def number(value) -> float | None:
    """A JSON-safe float: NaN and infinities become None."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def resolve_runs(session: Session, refs: list[str], *, systems: list[str] | None = None) -> tuple[int, ...]:
    """Run ids from ids or labels; a label names every run with it (within the given systems)."""
    ids: list[int] = []
    for ref in refs:
        query = select(Run.id).where(Run.label == ref)
        if systems:
            query = query.where(Run.system.in_(systems))
        found = list(session.scalars(query))
        if not found and ref.isdigit() and session.get(Run, int(ref)):
            found = [int(ref)]
        if not found:
            raise AnalysisError("run", f"no run {ref!r}" + (f" in systems {', '.join(systems)}" if systems else ""))
        ids += [i for i in found if i not in ids]
    return tuple(ids)


def check_selection(session: Session, selection: Selection) -> None:
    if selection.group_by not in GROUP_BY:
        raise AnalysisError("group_by", f"expected one of {', '.join(GROUP_BY)}, got {selection.group_by!r}")
    if selection.level not in LEVELS:
        raise AnalysisError("level", f"expected one of {', '.join(LEVELS)}, got {selection.level!r}")
    known = set(session.scalars(select(Run.id).where(Run.id.in_(selection.runs)))) if selection.runs else set()
    missing = [r for r in selection.runs if r not in known]
    if missing:
        raise AnalysisError("runs", f"no run with id {', '.join(map(str, missing))}")
    if selection.systems:
        present = set(session.scalars(select(Run.system).where(Run.system.in_(selection.systems))))
        absent = [s for s in selection.systems if s not in present]
        if absent:
            raise AnalysisError("systems", f"no runs for system {', '.join(map(repr, absent))}")


def load_ideas(session: Session, selection: Selection) -> pd.DataFrame:
    """One row per scored idea: idea_pk, idea_id, run_id, system, run, group, score, matched, score_id."""
    check_selection(session, selection)
    query = (select(Idea.pk, Idea.idea_id, Run.id, Run.system, Run.label, Score.id, Score.score, Score.matched,
                    Score.direction_score, Score.n_direction_matches)
             .join(Run, Run.id == Idea.run_id).join(Score, Score.idea_pk == Idea.pk).order_by(Idea.pk))
    if selection.runs:
        query = query.where(Run.id.in_(selection.runs))
    if selection.systems:
        query = query.where(Run.system.in_(selection.systems))
    frame = pd.DataFrame(session.execute(query).all(), columns=[
        "idea_pk", "idea_id", "run_id", "system", "run", "score_id", "score", "matched", "direction_score",
        "n_direction"])
    if selection.level == "direction":
        has = frame["direction_score"].notna()
        frame.loc[has, "score"] = frame.loc[has, "direction_score"]
        frame.loc[has, "matched"] = frame.loc[has, "n_direction"].fillna(0) > 0
    frame = frame.drop(columns=["direction_score", "n_direction"])
    frame["score"] = frame["score"].astype(float)
    frame["matched"] = frame["matched"].astype(bool)
    frame["group"] = frame["system"] if selection.group_by == "system" else frame["system"] + "/" + frame["run"]
    return frame


def unscored_count(session: Session, selection: Selection) -> int:
    """Ideas stored in the selection without a HindSight score (reported, never silently dropped)."""
    query = (select(func.count(Idea.pk)).join(Run, Run.id == Idea.run_id)
             .outerjoin(Score, Score.idea_pk == Idea.pk).where(Score.id.is_(None)))
    if selection.runs:
        query = query.where(Run.id.in_(selection.runs))
    if selection.systems:
        query = query.where(Run.system.in_(selection.systems))
    return session.scalar(query) or 0


def load_judge_scores(session: Session, idea_pks) -> pd.DataFrame:
    """Judge scores of these ideas: idea_pk, judge and one column per dimension (NaN when not given)."""
    pks = [int(p) for p in idea_pks]
    rows = []
    for start in range(0, len(pks), 500):  # SQLite caps bound parameters
        rows += session.execute(select(JudgeScore.idea_pk, JudgeScore.judge,
                                       *(getattr(JudgeScore, d) for d in DIMENSIONS))
                                .where(JudgeScore.idea_pk.in_(pks[start:start + 500]))).all()
    frame = pd.DataFrame(rows, columns=["idea_pk", "judge", *DIMENSIONS])
    for dim in DIMENSIONS:
        frame[dim] = frame[dim].astype(float)
    return frame


def check_dimension(dimension: str) -> None:
    if dimension not in DIMENSIONS:
        raise AnalysisError("dimension", f"expected one of {', '.join(DIMENSIONS)}, got {dimension!r}")


def pick_judge(judges: pd.DataFrame, judge: str | None) -> str:
    """The named judge, or the only judge present; several judges need a choice."""
    present = sorted(judges["judge"].unique())
    if judge is None:
        if len(present) == 1:
            return present[0]
        if not present:
            raise AnalysisError("judge", "no judge scores for the selected ideas: import them with "
                                         "`hindsight judge import` or POST /v1/judge-scores")
        raise AnalysisError("judge", f"several judges scored these ideas ({', '.join(present)}): choose one")
    if judge not in present:
        raise AnalysisError("judge", f"judge {judge!r} scored none of the selected ideas"
                                     + (f"; present: {', '.join(present)}" if present else ""))
    return judge


def with_judge(ideas: pd.DataFrame, judges: pd.DataFrame, *, judge: str, dimension: str) -> pd.DataFrame:
    """The ideas with a `judge_value` column (NaN where this judge gave no value on this dimension)."""
    values = judges.loc[judges["judge"] == judge, ["idea_pk", dimension]].rename(columns={dimension: "judge_value"})
    return ideas.merge(values, on="idea_pk", how="left")


def scoring_contexts(session: Session, score_ids) -> list[dict]:
    """The distinct (model, theta, index version, window) the selected scores were made with."""
    ids = [int(i) for i in score_ids]
    counts: dict[tuple, int] = {}
    for start in range(0, len(ids), 500):
        for row in session.execute(
                select(Score.model, Score.theta, Score.index_version, Score.cutoff, Score.window_end, Score.top_k,
                       func.count()).where(Score.id.in_(ids[start:start + 500]))
                .group_by(Score.model, Score.theta, Score.index_version, Score.cutoff, Score.window_end, Score.top_k)):
            key = tuple(row[:6])
            counts[key] = counts.get(key, 0) + row[6]
    return [{"model": m, "theta": t, "index_version": v, "cutoff": c.isoformat(), "window_end": w.isoformat(),
             "top_k": k, "ideas": n} for (m, t, v, c, w, k), n in sorted(counts.items(), key=lambda kv: -kv[1])]


def best_matches(session: Session, score_ids) -> dict[int, dict]:
    """Per score id: the matched paper with the highest impact, else the nearest paper (above_threshold false)."""
    ids = [int(i) for i in score_ids]
    best: dict[int, tuple] = {}
    for start in range(0, len(ids), 500):
        for m in session.scalars(select(Match).where(Match.score_id.in_(ids[start:start + 500]))):
            key = (m.above_threshold, m.impact if m.above_threshold else 0.0, m.similarity)
            if m.score_id not in best or key > best[m.score_id][0]:
                best[m.score_id] = (key, m)
    return {sid: {"paper_id": m.paper_id, "title": m.title, "venue": m.venue, "year": m.year,
                  "similarity": m.similarity, "impact": m.impact, "above_threshold": m.above_threshold}
            for sid, (_, m) in best.items()}


def finite(values) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return array[np.isfinite(array)]
