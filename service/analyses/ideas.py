"""One stored idea with its score, all its retrieved papers on both sides of the cutoff (dated, for the timeline)
and its judge scores."""

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from indexing.models import Idea, JudgeScore, Paper, Score, System
from service.analyses.selection import NotFound
from service.judge_scores import DIMENSIONS
from service.prior_art.store import prior_art_out, stored_prior_art, window_of
from service.runs import origin_of, verifier_of
from service.scoring.store import match_verdict_of


def idea_detail(session: Session, *, idea_pk: int) -> dict:
    idea = session.scalars(select(Idea).where(Idea.pk == idea_pk).options(
        selectinload(Idea.run), selectinload(Idea.score).selectinload(Score.matches))).first()
    if idea is None:
        raise NotFound("idea_pk", f"no idea with pk {idea_pk}")
    s = idea.score
    judges = session.scalars(select(JudgeScore).where(JudgeScore.idea_pk == idea_pk).order_by(JudgeScore.judge))
    prior = stored_prior_art(session, [s.id]).get(s.id) if s is not None else None
    dates = dict(session.execute(select(Paper.paper_id, Paper.publication_date).where(
        Paper.paper_id.in_([m.paper_id for m in s.matches]))).all()) if s is not None else {}
    declared = session.scalar(select(System.knowledge_cutoff).where(System.name == idea.run.system))
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
             "shared_terms": m.shared_terms, **match_verdict_of(m),
             "publication_date": dates[m.paper_id].isoformat() if m.paper_id in dates else None} for m in s.matches],
        # the look-back side (null when scored without prior art) and the knowledge cutoff, for the timeline
        "prior_art": prior_art_out(prior).model_dump() if prior is not None else None,
        "lookback_window": window_of(prior) if prior is not None else None,
        "knowledge_cutoff": (prior.knowledge_cutoff.isoformat() if prior is not None and prior.knowledge_cutoff
                             else declared.isoformat() if declared else None),
        "judges": [{"judge": j.judge, **{d: getattr(j, d) for d in DIMENSIONS}} for j in judges],
    }
