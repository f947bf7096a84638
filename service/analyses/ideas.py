"""One stored idea with its score, all its retrieved papers and its judge scores."""

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from indexing.models import Idea, JudgeScore, Score
from service.analyses.selection import NotFound
from service.judges import DIMENSIONS
from service.runs import match_verdict_of, origin_of, verifier_of


def idea_detail(session: Session, *, idea_pk: int) -> dict:
    idea = session.scalars(select(Idea).where(Idea.pk == idea_pk).options(
        selectinload(Idea.run), selectinload(Idea.score).selectinload(Score.matches))).first()
    if idea is None:
        raise NotFound("idea_pk", f"no idea with pk {idea_pk}")
    s = idea.score
    judges = session.scalars(select(JudgeScore).where(JudgeScore.idea_pk == idea_pk).order_by(JudgeScore.judge))
    return {
        "idea_pk": idea.pk, "idea_id": idea.idea_id, "system": idea.run.system, "run": idea.run.label,
        "run_id": idea.run_id, "problem": idea.problem, "method": idea.method, "text": idea.text,
        "origin": origin_of(idea),
        "score": None if s is None else {
            "score": s.score, "matched": s.matched, "model": s.model, "theta": s.theta,
            "index_version": s.index_version, "cutoff": s.cutoff.isoformat(), "window_end": s.window_end.isoformat(),
            "top_k": s.top_k, "matcher": s.matcher or "dense", "matcher_version": s.matcher_version,
            "thresholds": s.thresholds or {"theta": s.theta}, "direction_score": s.direction_score,
            "n_matches": s.n_matches, "n_direction_matches": s.n_direction_matches, "shape": s.shape,
            "warnings": s.warnings, **verifier_of(s)},
        "matches": [] if s is None else [
            {"rank": m.rank, "paper_id": m.paper_id, "title": m.title, "venue": m.venue, "year": m.year,
             "citations": m.citations, "similarity": m.similarity, "impact": m.impact,
             "above_threshold": m.above_threshold, "p_realised": m.p_realised, "p_direction": m.p_direction,
             "p_method": m.p_method, "realised": m.realised, "direction": m.direction,
             "evidence_sentence": m.evidence_sentence, "problem_sentence": m.problem_sentence,
             "shared_terms": m.shared_terms, **match_verdict_of(m)} for m in s.matches],
        "judges": [{"judge": j.judge, **{d: getattr(j, d) for d in DIMENSIONS}} for j in judges],
    }
