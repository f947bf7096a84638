"""Which scored ideas an analysis reads, and their judge scores, as pandas frames."""

import math
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from indexing.errors import DomainError
from indexing.models import Idea, JudgeScore, Match, Run, Score, System
from indexing.windows import iso_day
from service.judge_scores import DIMENSIONS
from service.runs import RunNotFound, runs_named

GROUP_BY = ("system", "run", "window")
LEVELS = ("realised", "direction")


class AnalysisError(DomainError, ValueError):
    """Bad analysis parameters; names the parameter at fault. HTTP answers it with `status`."""

    field: str

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)


class NotFound(AnalysisError):
    """The selection names a run, system or judge the store does not hold, or holds nothing to analyse."""

    status = 404


class Conflict(AnalysisError):
    """The store's contents make the request ambiguous (several judges, several windows): say which one."""

    status = 409


@dataclass(frozen=True)
class Selection:
    """Runs (ids), systems and a scoring window to include (empty = all), how ideas are grouped, whether scores
    made in different windows may be pooled, and which decision level the HindSight score means: `realised` (the
    score) or `direction` (the hybrid matcher's direction score; a score stored by the dense matcher has no
    direction level and keeps its score)."""

    runs: tuple[int, ...] = ()
    systems: tuple[str, ...] = ()
    group_by: str = "system"
    cutoff: str | None = None  # only scores whose window starts on this date
    until: str | None = None  # only scores whose window ends on this date
    pool_windows: bool = False
    level: str = "realised"

    def as_dict(self) -> dict:
        return {"runs": list(self.runs), "systems": list(self.systems), "group_by": self.group_by,
                "cutoff": self.cutoff, "until": self.until, "pool_windows": self.pool_windows, "level": self.level}


def _day(value: str | None, field: str) -> date | None:
    if value is None:
        return None
    try:
        return iso_day(str(value).strip())
    except ValueError:
        raise AnalysisError(field, f"{str(value)[:40]!a} is not a date (YYYY-MM-DD)") from None


def window_label(cutoff: date, end: date, normalisation: str = "global") -> str:
    """A scoring window as a label; scores under another citation normalisation are on another scale."""
    return f"{cutoff.isoformat()}..{end.isoformat()}" + ("" if normalisation == "global" else f" ({normalisation})")


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
        try:
            found = runs_named(session, ref, systems)
        except RunNotFound:
            where = f" in systems {', '.join(systems)}" if systems else ""
            raise NotFound("run", f"no run {ref!r}{where}") from None
        ids += [r.id for r in found if r.id not in ids]
    return tuple(ids)


def check_selection(session: Session, selection: Selection) -> None:
    if selection.group_by not in GROUP_BY:
        raise AnalysisError("group_by", f"expected one of {', '.join(GROUP_BY)}, got {selection.group_by!r}")
    if selection.level not in LEVELS:
        raise AnalysisError("level", f"expected one of {', '.join(LEVELS)}, got {selection.level!r}")
    known = set(session.scalars(select(Run.id).where(Run.id.in_(selection.runs)))) if selection.runs else set()
    missing = [r for r in selection.runs if r not in known]
    if missing:
        raise NotFound("runs", f"no run with id {', '.join(map(str, missing))}")
    if selection.systems:
        present = set(session.scalars(select(Run.system).where(Run.system.in_(selection.systems))))
        absent = [s for s in selection.systems if s not in present]
        if absent:
            raise NotFound("systems", f"no runs for system {', '.join(map(repr, absent))}")


def load_ideas(session: Session, selection: Selection) -> pd.DataFrame:
    """One row per scored idea: idea_pk, idea_id, run_id, system, run, group, score, matched, score_id, window,
    leak_risk.

    Scores from different windows (cutoff, end, citation normalisation) measure different futures on different
    scales: a selection that mixes them is refused unless pool_windows, or grouped per window."""
    check_selection(session, selection)
    cutoff, until = _day(selection.cutoff, "cutoff"), _day(selection.until, "until")
    query = (select(Idea.pk, Idea.idea_id, Run.id, Run.system, Run.label, Score.id, Score.score, Score.matched,
                    Score.cutoff, Score.window_end, Score.citation_normalisation, Score.leak_risk,
                    System.knowledge_cutoff, Score.direction_score, Score.n_direction_matches)
             .join(Run, Run.id == Idea.run_id).join(Score, Score.idea_pk == Idea.pk)
             .outerjoin(System, System.name == Run.system).order_by(Idea.pk))
    if selection.runs:
        query = query.where(Run.id.in_(selection.runs))
    if selection.systems:
        query = query.where(Run.system.in_(selection.systems))
    if cutoff:
        query = query.where(Score.cutoff == cutoff)
    if until:
        query = query.where(Score.window_end == until)
    rows = session.execute(query).all()
    frame = pd.DataFrame([r[:8] for r in rows], columns=[
        "idea_pk", "idea_id", "run_id", "system", "run", "score_id", "score", "matched"])
    if selection.level == "direction":
        has = frame.index[[r[13] is not None for r in rows]]
        frame.loc[has, "score"] = [rows[i][13] for i in has]
        frame.loc[has, "matched"] = [(rows[i][14] or 0) > 0 for i in has]
    frame["score"] = frame["score"].astype(float)
    frame["matched"] = frame["matched"].astype(bool)
    frame["window"] = pd.Series([window_label(r[8], r[9], r[10]) for r in rows], dtype=object)
    # flagged when scored, or since: a system declared later with a cutoff after this score's
    frame["leak_risk"] = pd.Series([bool(r[11]) or (r[12] is not None and r[8] < r[12]) for r in rows], dtype=bool)
    if selection.group_by == "system":
        frame["group"] = frame["system"]
    elif selection.group_by == "run":
        frame["group"] = frame["system"] + "/" + frame["run"]
    else:
        frame["group"] = frame["system"] + " @ " + frame["window"]
    windows = sorted(frame["window"].unique())
    if len(windows) > 1 and not selection.pool_windows and selection.group_by != "window":
        raise Conflict("pool_windows", (
            f"the selection mixes scores from {len(windows)} windows ({', '.join(windows)}): a score at one cutoff "
            "counts matches among other papers, with c_hat over other papers, than a score at another, so pooling "
            "them compares different futures; filter one window (cutoff=..., until=...), group per window "
            "(group_by=window), or pool anyway with pool_windows=true (--pool-windows)"))
    return frame


def window_report(ideas: pd.DataFrame, selection: Selection) -> dict:
    """The windows an answer's scores come from and the ideas scored earlier than their system's knowledge."""
    leaks = ideas[ideas["leak_risk"].astype(bool)]
    report: dict[str, Any] = {
        "windows": [{"window": w, "ideas": int(len(part)), "leak_risk_ideas": int(part["leak_risk"].sum())}
                    for w, part in ideas.groupby("window", sort=True)],
        "pooled_windows": bool(selection.pool_windows and ideas["window"].nunique() > 1),
        "leak_risk": {"ideas": int(len(leaks)), "systems": sorted(leaks["system"].unique().tolist())},
    }
    if len(leaks):
        report["warnings"] = [{"code": "leak_risk", "message": (
            f"{len(leaks)} of {len(ideas)} scores ({', '.join(report['leak_risk']['systems'])}) were made at a cutoff "
            "earlier than the system's declared knowledge cutoff: their matches may be papers the generator knew")}]
    return report


def unscored_count(session: Session, selection: Selection) -> int:
    """Ideas stored in the selection without a HindSight score (reported, never silently dropped)."""
    query = (select(func.count(Idea.pk)).join(Run, Run.id == Idea.run_id)
             .outerjoin(Score, Score.idea_pk == Idea.pk).where(Score.id.is_(None)))  # any window: none has one
    if selection.runs:
        query = query.where(Run.id.in_(selection.runs))
    if selection.systems:
        query = query.where(Run.system.in_(selection.systems))
    return session.scalar(query) or 0


def load_judge_scores(session: Session, idea_pks) -> pd.DataFrame:
    """Judge scores of these ideas: idea_pk, judge and one column per dimension (NaN when not given)."""
    pks = [int(p) for p in idea_pks]
    rows: list[Any] = []
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
            raise NotFound("judge", "no judge scores for the selected ideas: import them with "
                                         "`hindsight judge import` or POST /v1/judge-scores")
        raise Conflict("judge", f"several judges scored these ideas ({', '.join(present)}): choose one")
    if judge not in present:
        raise NotFound("judge", f"judge {judge!r} scored none of the selected ideas"
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
