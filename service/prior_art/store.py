"""Storing each score's look-back side beside it, and reading it back for analyses, runs and labels."""

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.orm import Session, selectinload

from indexing.models import Idea, Score
from service.prior_art.models import PriorArt, PriorArtMatch
from service.prior_art.window import window_dict
from service.scoring.store import decision_columns, evidence_of, match_verdict_of
from service.schemas import IdeaIn, IdeaScoreOut, PriorArtMatchOut, PriorArtOut, ScoringContext

if TYPE_CHECKING:  # pandas loads where the analyses read prior art: a score never does (docs/startup.md)
    import pandas as pd

CHUNK = 500  # SQLite caps bound parameters


def store_prior_art(session: Session, *, run_id: int, ideas: Sequence[IdeaIn], results: Sequence[IdeaScoreOut],
                    context: ScoringContext) -> int:
    """Store the look-back side of the run's just-stored scores (their old rows went with the old scores);
    returns how many were stored (0 when prior art was off)."""
    window = context.lookback_window
    if window is None:
        return 0
    pairs = [(i, p) for i, r in zip(ideas, results) if (p := r.prior_art) is not None]
    if not pairs:
        return 0
    score_ids = dict(session.execute(select(Idea.idea_id, Score.id).join(Score, Score.idea_pk == Idea.pk).where(
        Idea.run_id == run_id, Idea.idea_id.in_([i.id for i, _ in pairs]))).all())
    start = date.fromisoformat(window["start"]) if window["start"] else None
    knowledge = date.fromisoformat(window["knowledge_cutoff"]) if window["knowledge_cutoff"] else None
    common = dict(lookback_days=window["lookback_days"], requested_start=date.fromisoformat(window["requested_start"]),
                  start=start, end=date.fromisoformat(window["end"]), clipped=window["clipped"],
                  papers=window["papers"], status=window["status"], knowledge_cutoff=knowledge,
                  verifier=context.verifier)
    rows = [dict(score_id=score_ids[idea.id], class_realised=p.class_realised, class_direction=p.class_direction,
                 realised_before=p.realised_before, direction_before=p.direction_before, n_realised=p.n_realised,
                 n_direction=p.n_direction, n_realised_before_knowledge=p.n_realised_before_knowledge,
                 n_realised_after_knowledge=p.n_realised_after_knowledge, **common)
            for idea, p in pairs]
    ids = session.execute(insert(PriorArt).returning(PriorArt.id, sort_by_parameter_order=True), rows).scalars().all()
    matches = [dict(prior_art_id=pa_id, rank=rank, **_match_row(m))
               for pa_id, (_, p) in zip(ids, pairs) for rank, m in enumerate(p.matches, start=1)]
    if matches:  # Core executemany on the connection: no ORM bulk path for K rows an idea
        session.connection().execute(insert(PriorArtMatch), matches)
    session.flush()
    return len(rows)


def _match_row(m: PriorArtMatchOut) -> dict:
    return dict(paper_id=m.paper_id, title=m.title, venue=m.venue, year=m.year,
                publication_date=date.fromisoformat(m.publication_date), citations=m.citations,
                period=m.period, **decision_columns(m))


FRAME_COLUMNS = ["score_id", "class_realised", "class_direction", "realised_before", "direction_before",
                 "lookback_start", "lookback_end", "lookback_days", "clipped", "status", "knowledge_cutoff",
                 "n_realised_before_knowledge", "n_realised_after_knowledge"]


def load_prior_art(session: Session, score_ids: Sequence[int]) -> "pd.DataFrame":
    """Per score id that has a look-back side: its classes, window and knowledge split (FRAME_COLUMNS)."""
    import pandas as pd

    ids = [int(i) for i in score_ids]
    rows: list = []
    for at in range(0, len(ids), CHUNK):
        rows += session.execute(select(
            PriorArt.score_id, PriorArt.class_realised, PriorArt.class_direction, PriorArt.realised_before,
            PriorArt.direction_before, PriorArt.start, PriorArt.end, PriorArt.lookback_days, PriorArt.clipped,
            PriorArt.status, PriorArt.knowledge_cutoff, PriorArt.n_realised_before_knowledge,
            PriorArt.n_realised_after_knowledge).where(PriorArt.score_id.in_(ids[at:at + CHUNK]))).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=FRAME_COLUMNS)


def prior_art_out(row: PriorArt) -> PriorArtOut:
    """A stored look-back side as the answer gives it."""
    return PriorArtOut(
        class_realised=row.class_realised, class_direction=row.class_direction,  # type: ignore[arg-type]
        realised_before=row.realised_before, direction_before=row.direction_before, n_realised=row.n_realised,
        n_direction=row.n_direction, n_realised_before_knowledge=row.n_realised_before_knowledge,
        n_realised_after_knowledge=row.n_realised_after_knowledge,
        matches=[PriorArtMatchOut(
            paper_id=m.paper_id, title=m.title, venue=m.venue, year=m.year,
            publication_date=m.publication_date.isoformat(), citations=m.citations, similarity=m.similarity,
            realised=m.realised, direction=m.direction, period=m.period,  # type: ignore[arg-type]
            p_realised=m.p_realised, p_direction=m.p_direction, p_method=m.p_method,
            evidence=evidence_of(m), **match_verdict_of(m))
            for m in row.matches])


def window_of(row: PriorArt) -> dict:
    """A stored look-back side's window, as the answer's `lookback_window` gives it."""
    return window_dict(start=row.start, end=row.end, requested_start=row.requested_start,
                       lookback_days=row.lookback_days, clipped=row.clipped, papers=row.papers, status=row.status,
                       knowledge_cutoff=row.knowledge_cutoff)


def stored_prior_art(session: Session, score_ids: Sequence[int]) -> dict[int, PriorArt]:
    """Per score id, its stored look-back side with its matches (for a run's or an idea's detail)."""
    ids = [int(i) for i in score_ids]
    out: dict[int, PriorArt] = {}
    for at in range(0, len(ids), CHUNK):
        for row in session.scalars(select(PriorArt).where(PriorArt.score_id.in_(ids[at:at + CHUNK]))
                                   .options(selectinload(PriorArt.matches))):  # one query per chunk, not per score
            out[row.score_id] = row
    return out
