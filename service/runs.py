"""Reading stored runs and scores."""

from sqlalchemy import Integer, cast, func, select
from sqlalchemy.orm import Session, selectinload

from indexing.models import Idea, Run, Score


class RunNotFound(LookupError):
    pass


def list_runs(session: Session) -> list[dict]:
    rows = session.execute(
        select(Run, func.count(Score.id), func.avg(Score.score), func.avg(cast(Score.matched, Integer)))
        .outerjoin(Idea, Idea.run_id == Run.id).outerjoin(Score, Score.idea_pk == Idea.pk)
        .group_by(Run.id).order_by(Run.id)
    ).all()
    return [{"id": r.id, "system": r.system, "label": r.label, "created": r.created_at.isoformat(),
             "ideas": n, "mean_score": mean, "match_rate": rate} for r, n, mean, rate in rows]


def find_run(session: Session, ref: str, system: str | None = None) -> Run:
    """A run by numeric id, or by label (with system when the label is ambiguous)."""
    if ref.isascii() and ref.isdigit() and int(ref) < 2**63:  # '²' is a digit to isdigit(); SQLite ints are 64-bit
        run = session.get(Run, int(ref))
        if run:
            return run
    query = select(Run).where(Run.label == ref)
    if system:
        query = query.where(Run.system == system)
    runs = session.scalars(query).all()
    if not runs:
        raise RunNotFound(f"no run {ref!r}" + (f" for system {system!r}" if system else ""))
    if len(runs) > 1:
        raise RunNotFound(f"run label {ref!r} is used by systems {', '.join(r.system for r in runs)}; "
                          "add ?system=... or use the numeric run id")
    return runs[0]


def run_scores(session: Session, run: Run) -> dict:
    ideas = session.scalars(select(Idea).where(Idea.run_id == run.id).order_by(Idea.pk).options(
        selectinload(Idea.score).selectinload(Score.matches))).all()
    out = []
    for idea in ideas:
        s = idea.score
        if s is None:
            continue
        out.append({
            "id": idea.idea_id, "problem": idea.problem, "method": idea.method, "text": idea.text,
            "score": s.score, "matched": s.matched, "model": s.model, "theta": s.theta,
            "index_version": s.index_version, "cutoff": s.cutoff.isoformat(),
            "window": {"start": s.cutoff.isoformat(), "end": s.window_end.isoformat()}, "top_k": s.top_k,
            "leak_risk": s.leak_risk, "citation_normalisation": s.citation_normalisation,
            "scored_at": s.scored_at.isoformat(), "matcher": s.matcher or "dense",
            "matcher_version": s.matcher_version, "thresholds": s.thresholds or {"theta": s.theta},
            "n_matches": s.n_matches, "direction_score": s.direction_score,
            "n_direction_matches": s.n_direction_matches,
            "matches": [{"paper_id": m.paper_id, "title": m.title, "venue": m.venue, "year": m.year,
                         "citations": m.citations, "similarity": m.similarity, "impact": m.impact,
                         "above_threshold": m.above_threshold, "p_realised": m.p_realised,
                         "p_direction": m.p_direction, "realised": m.realised, "direction": m.direction,
                         "evidence": None if m.evidence_sentence is None and m.shared_terms is None else
                         {"sentence": m.evidence_sentence, "shared_terms": m.shared_terms or []}}
                        for m in s.matches],
        })
    return {"run_id": run.id, "system": run.system, "run": run.label, "scores": out}
