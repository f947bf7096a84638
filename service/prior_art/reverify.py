"""`hindsight verify` on a stored run: the verifier reads each idea's stored look-back candidates as it reads the
forward ones, and the idea's classes are decided again from both verified sides."""

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from indexing.matcher.verifier.step import Verified
from indexing.models import Score
from service.prior_art.classes import summary
from service.prior_art.models import PriorArt
from service.scoring.store import verdict_columns


def stored_lookback(session: Session, score_id: int) -> PriorArt | None:
    return session.scalars(select(PriorArt).where(PriorArt.score_id == score_id)
                           .options(selectinload(PriorArt.matches))).first()


def apply_lookback_verified(session: Session, score: Score, result: Verified | None, *, revision: str) -> None:
    """The stored look-back matches take the verified decisions (the embedding-only ones kept the first time), and
    the classes are decided again from them and the score's (verified) forward side."""
    prior = stored_lookback(session, score.id)
    if prior is None:
        return
    if result is not None:
        for m, is_r, is_d, verdict in zip(prior.matches, result.realised, result.direction, result.verdicts):
            if m.embedding_realised is None and prior.verifier is None:
                m.embedding_realised, m.embedding_direction = m.realised, m.direction
            m.realised, m.direction = bool(is_r), bool(is_r or is_d)
            for name, value in verdict_columns(verdict).items():
                setattr(m, name, value)
        prior.verifier = revision
    if prior.status != "known":
        return  # unknown stays unknown: nothing before the cutoff was searched
    for name, value in summary(prior.matches, score, knowledge_declared=prior.knowledge_cutoff is not None).items():
        setattr(prior, name, value)
