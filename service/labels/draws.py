"""Draws: uniform random samples, without replacement, of a run's scored ideas, one stratum per stored run (system)."""

import secrets
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from indexing.db import write_lock
from indexing.errors import DomainError
from indexing.models import Idea, Run, Score
from service.labels.candidates import candidates_of, lookback_candidates_of
from service.labels.models import Draw, DrawIdea, Label
from service.runs import RunNotFound, runs_named


class LabelError(DomainError, ValueError):
    """A request about labels that cannot be met; names the field at fault. HTTP answers it with `status`."""

    field: str

    def __init__(self, field: str, message: str, status: int | None = None) -> None:
        super().__init__(message, field=field, status=status)


def runs_of(session: Session, ref: str, system: str | None = None) -> list[Run]:
    """The stored runs a reference names: a numeric id, or a label (every system's run with it, or one system's)."""
    try:
        return runs_named(session, ref, system)
    except RunNotFound as exc:
        raise LabelError("run", str(exc), 404) from None


def draw(session: Session, *, run: str, n: int, seed: int | None = None, system: str | None = None) -> dict:
    """Draw n ideas (fewer when fewer are left) from each stratum's scored ideas not drawn yet, in a random order;
    each draw lists its ideas' ids in that order."""
    if n < 1:
        raise LabelError("n", f"must be at least 1, got {n}")
    seed = secrets.randbelow(2**32) if seed is None else int(seed)
    if not 0 <= seed < 2**32:
        raise LabelError("seed", f"must be in 0..{2**32 - 1}, got {seed}")
    write_lock(session)  # another draw of the run at once: this one reads what the other left
    rng = np.random.default_rng(seed)
    made = []
    for stratum in runs_of(session, run, system):
        scored = list(session.scalars(select(Idea.pk).join(Score, Score.idea_pk == Idea.pk)
                                      .where(Idea.run_id == stratum.id).order_by(Idea.pk)))
        taken = set(session.scalars(select(DrawIdea.idea_pk).join(Draw, Draw.id == DrawIdea.draw_id)
                                    .where(Draw.run_id == stratum.id)))
        left = [pk for pk in scored if pk not in taken]
        k = min(n, len(left))
        if k == 0:
            raise LabelError("n", f"run {stratum.id} ({stratum.system}/{stratum.label}) has no scored idea left to "
                                  f"draw: all {len(scored)} are drawn", 409)
        chosen = [left[i] for i in rng.choice(len(left), size=k, replace=False)]
        row = Draw(run_id=stratum.id, seed=seed, population=len(scored), available=len(left), n=k,
                   inclusion_probability=k / len(left))
        session.add(row)
        session.flush()
        session.add_all(DrawIdea(draw_id=row.id, idea_pk=pk, position=i) for i, pk in enumerate(chosen, 1))
        ids = dict(session.execute(select(Idea.pk, Idea.idea_id).where(Idea.pk.in_(chosen))).all())
        made.append({**describe(session, row), "ideas": [ids[pk] for pk in chosen]})
    session.commit()
    return {"run": run, "seed": seed, "draws": made}


def describe(session: Session, row: Draw) -> dict:
    """A draw as the answers show it: its stratum, sizes, seed and the labelled ideas per annotator."""
    run = session.get(Run, row.run_id)
    assert run is not None
    labelled = session.execute(
        select(Label.annotator, func.count(func.distinct(Label.idea_pk)))
        .join(DrawIdea, DrawIdea.idea_pk == Label.idea_pk).where(DrawIdea.draw_id == row.id)
        .group_by(Label.annotator).order_by(Label.annotator)).all()
    return {"draw": row.id, "run_id": run.id, "system": run.system, "run": run.label, "seed": row.seed,
            "population": row.population, "available": row.available, "n": row.n,
            "inclusion_probability": row.inclusion_probability, "created": row.created_at.isoformat(),
            "labelled": {a: int(c) for a, c in labelled}}


def draws_of(session: Session, run_ids: list[int]) -> list[Draw]:
    return list(session.scalars(select(Draw).where(Draw.run_id.in_(run_ids)).order_by(Draw.id)))


def status(session: Session, *, run: str, system: str | None = None) -> dict:
    """Per draw, ideas labelled of drawn per annotator; per stratum, the labels of ideas outside any draw."""
    runs = runs_of(session, run, system)
    strata = []
    for stratum in runs:
        outside = session.execute(
            select(Label.annotator, func.count(func.distinct(Label.idea_pk)), func.count(Label.id))
            .join(Idea, Idea.pk == Label.idea_pk).outerjoin(DrawIdea, DrawIdea.idea_pk == Label.idea_pk)
            .where(Idea.run_id == stratum.id, DrawIdea.idea_pk.is_(None))
            .group_by(Label.annotator).order_by(Label.annotator)).all()
        draws = [describe(session, d) for d in draws_of(session, [stratum.id])]
        drawn = sum(d["n"] for d in draws)
        strata.append({"run_id": stratum.id, "system": stratum.system, "run": stratum.label,
                       "scored": session.scalar(select(func.count(Score.id)).join(Idea, Idea.pk == Score.idea_pk)
                                                .where(Idea.run_id == stratum.id)) or 0,
                       "drawn": drawn, "draws": draws,
                       "outside_draws": {a: {"ideas": int(i), "labels": int(c)} for a, i, c in outside}})
    return {"run": run, "strata": strata}


def item(session: Session, *, draw_id: int, annotator: str, top_k: int, position: int | None = None) -> dict:
    """One drawn idea for the labelling view: the annotator's first unlabelled one in draw order (or the one at
    `position`), its problem and method, its top K candidates with their evidence and the annotator's labels."""
    row = session.get(Draw, draw_id)
    if row is None:
        raise LabelError("draw", f"no draw {draw_id}", 404)
    members = session.execute(select(DrawIdea.position, DrawIdea.idea_pk).where(DrawIdea.draw_id == draw_id)
                              .order_by(DrawIdea.position)).all()
    done = set(session.scalars(select(Label.idea_pk).where(
        Label.annotator == annotator, Label.idea_pk.in_([pk for _, pk in members]))))
    progress = {"labelled": sum(pk in done for _, pk in members), "drawn": len(members)}
    if position is None:
        chosen = next(((p, pk) for p, pk in members if pk not in done), None)
    else:
        chosen = next(((p, pk) for p, pk in members if p == position), None)
        if chosen is None:
            raise LabelError("position", f"draw {draw_id} has positions 1..{len(members)}, not {position}", 404)
    out: dict[str, Any] = {"draw": describe(session, row), "annotator": annotator, "progress": progress,
                           "top_k": top_k, "idea": None}
    if chosen is None:
        return out
    pos, pk = chosen
    idea = session.get(Idea, pk)
    assert idea is not None
    mine = {lab.paper_id: lab.label for lab in session.scalars(
        select(Label).where(Label.idea_pk == pk, Label.annotator == annotator))}
    out["idea"] = {"position": pos, "idea_pk": pk, "idea_id": idea.idea_id, "title": idea.title,
                   "problem": idea.problem, "method": idea.method, "text": idea.text, "labelled": pk in done,
                   "candidates": candidates_of(session, pk, top_k),
                   "lookback_candidates": lookback_candidates_of(session, pk, top_k), "cutoff": _cutoff_of(session, pk),
                   "labels": mine}
    return out


def _cutoff_of(session: Session, idea_pk: int) -> str | None:
    """The cutoff the idea was scored at: its forward candidates are from it on, its look-back ones before it."""
    day = session.scalar(select(Score.cutoff).where(Score.idea_pk == idea_pk))
    return day.isoformat() if day else None
