"""An idea's stored candidates as a reader sees them: rank, title, abstract, evidence, the matcher's calls; on the
forward side (after the cutoff) and on the look-back side (prior art, before it)."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.models import Match, Paper, Score
from service.prior_art.models import PriorArt, PriorArtMatch


def candidates_of(session: Session, idea_pk: int, top_k: int) -> list[dict]:
    """The idea's top K stored candidates in rank order, each with its abstract from the paper store."""
    matches = list(session.scalars(select(Match).join(Score, Score.id == Match.score_id)
                                   .where(Score.idea_pk == idea_pk).order_by(Match.rank).limit(top_k)))
    abstracts = dict(session.execute(select(Paper.paper_id, Paper.abstract)
                                     .where(Paper.paper_id.in_([m.paper_id for m in matches]))).all())
    return [{"rank": m.rank, "paper_id": m.paper_id, "title": m.title, "abstract": abstracts.get(m.paper_id, ""),
             "venue": m.venue, "year": m.year, "similarity": m.similarity, "p_realised": m.p_realised,
             "p_direction": m.p_direction, "realised": bool(m.realised if m.realised is not None
                                                             else m.above_threshold),
             "direction": bool(m.direction), "evidence_sentence": m.evidence_sentence,
             "problem_sentence": m.problem_sentence, "shared_terms": m.shared_terms or []} for m in matches]


def lookback_candidates_of(session: Session, idea_pk: int, top_k: int) -> list[dict]:
    """The idea's top K stored look-back candidates (published before its cutoff) in rank order, shaped as
    candidates_of's, each marked `side: before` with its publication date and its period against the system's
    knowledge cutoff; none when the idea was scored without prior art."""
    matches = list(session.scalars(
        select(PriorArtMatch).join(PriorArt, PriorArt.id == PriorArtMatch.prior_art_id)
        .join(Score, Score.id == PriorArt.score_id).where(Score.idea_pk == idea_pk)
        .order_by(PriorArtMatch.rank).limit(top_k)))
    abstracts = dict(session.execute(select(Paper.paper_id, Paper.abstract)
                                     .where(Paper.paper_id.in_([m.paper_id for m in matches]))).all())
    return [{"rank": m.rank, "paper_id": m.paper_id, "title": m.title, "abstract": abstracts.get(m.paper_id, ""),
             "venue": m.venue, "year": m.year, "publication_date": m.publication_date.isoformat(),
             "similarity": m.similarity, "p_realised": m.p_realised, "p_direction": m.p_direction,
             "realised": bool(m.realised), "direction": bool(m.direction), "period": m.period,
             "evidence_sentence": m.evidence_sentence, "problem_sentence": m.problem_sentence,
             "shared_terms": m.shared_terms or [], "side": "before"} for m in matches]
