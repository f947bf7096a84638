"""A run read from a generator's files: its scores with each idea's origin, and the generator's own ratings as
judge scores, stored in one transaction."""

from sqlalchemy.orm import Session

from service.ideas import ReadResult
from service.judges import store_ratings
from service.schemas import IdeaScoreOut, ScoringContext
from service.scoring import store_scores


def store_run(session: Session, *, system: str, label: str, read: ReadResult, results: list[IdeaScoreOut],
              context: ScoringContext) -> tuple[int, dict | None]:
    """The run id, and what was stored of the generator's ratings (None when its files hold none)."""
    ideas = [r.idea for r in read.ideas]
    run_id = store_scores(session, system=system, label=label, ideas=ideas, results=results, context=context)
    ratings = {r.idea.id: (r.judge, r.ratings) for r in read.ideas if r.judge and r.ratings}
    return run_id, store_ratings(session, run_id=run_id, ratings=ratings) if ratings else None
