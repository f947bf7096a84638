"""Reading stored runs and scores."""

from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import Integer, cast, func, select
from sqlalchemy.orm import Session, selectinload

from indexing.db import session_scope
from indexing.errors import NotFoundError
from indexing.models import Idea, Match, Run, Score
from service.prior_art.store import load_prior_art, prior_art_out, stored_prior_art, window_of
from service.scoring.store import evidence_of, match_verdict_of


class RunNotFound(NotFoundError, LookupError):
    """No run by that reference, or (`systems`) a label several systems share where one run is needed. Its text
    names the HTTP query parameter; `text(option)` names the CLI's option instead."""

    def __init__(self, ref: str, system: str | None = None, systems: list[str] | None = None) -> None:
        self.ref, self.system, self.systems = ref, system, systems or []
        super().__init__(self.text("?system=..."))

    def text(self, system_option: str) -> str:
        if self.systems:
            return (f"run label {self.ref!r} is used by systems {', '.join(self.systems)}; add {system_option} "
                    "or use the numeric run id")
        return f"no run {self.ref!r}" + (f" for system {self.system!r}" if self.system else "")


def list_runs(session: Session) -> list[dict]:
    rows = session.execute(
        select(Run, func.count(Score.id), func.avg(Score.score), func.avg(cast(Score.matched, Integer)))
        .outerjoin(Idea, Idea.run_id == Run.id).outerjoin(Score, Score.idea_pk == Idea.pk)
        .group_by(Run.id).order_by(Run.id)
    ).all()
    return [{"id": r.id, "system": r.system, "label": r.label, "created": r.created_at.isoformat(),
             "ideas": n, "mean_score": mean, "match_rate": rate} for r, n, mean, rate in rows]


def require_runs(session: Session, *, system: str | None, run: str | None) -> None:
    """A stored run has this system and/or label (a judge file's scope); 404 otherwise."""
    query = select(Run.id)
    if system:
        query = query.where(Run.system == system)
    if run:
        query = query.where(Run.label == run)
    if session.scalars(query.limit(1)).first() is None:
        raise NotFoundError(f"no stored run matches system={system!r} run={run!r}")


def find_run(session: Session, ref: str, system: str | None = None) -> Run:
    """The one run a reference names (runs_named); a label several systems share needs `system`."""
    runs = runs_named(session, ref, system)
    if len(runs) > 1:
        raise RunNotFound(ref, system, [r.system for r in runs])
    return runs[0]


def runs_named(session: Session, ref: str, system: str | Sequence[str] | None = None) -> list[Run]:
    """Every run a reference names, as every command and endpoint reads it: a numeric run id names that run (the
    dashboard and the API's answers name runs by id, so an id wins over a label of the same digits), else a label
    names each system's run with it (or only those of `system`, one name or several)."""
    systems = [system] if isinstance(system, str) else list(system or ())
    if ref.isascii() and ref.isdigit() and int(ref) < 2**63:  # '²' is a digit to isdigit(); SQLite ints are 64-bit
        run = session.get(Run, int(ref))
        if run is not None and (not systems or run.system in systems):
            return [run]
    query = select(Run).where(Run.label == ref)
    if systems:
        query = query.where(Run.system.in_(systems))
    found = list(session.scalars(query.order_by(Run.system, Run.id)))
    if not found:
        raise RunNotFound(ref, ", ".join(systems) or None)
    return found


def run_id_of(db_path: Path, ref: str, system: str | None = None) -> int:
    """A run's id by id or label (RunNotFound otherwise)."""
    with session_scope(db_path) as session:
        return find_run(session, ref, system).id


def run_ids_of(db_path: Path, ref: str, system: str | None = None) -> list[int]:
    """Every run's id a reference names: a label shared by several systems names each one's run."""
    with session_scope(db_path) as session:
        return [r.id for r in runs_named(session, ref, system)]


def origin_of(idea: Idea) -> dict | None:
    """Where the idea was read from (None for ideas sent as JSON without one)."""
    values = {"file": idea.origin_file, "generator": idea.generator, "topic": idea.topic, "title": idea.title}
    return values if any(v is not None for v in values.values()) else None


def verifier_of(s: Score) -> dict:
    """Which verifier decided the score and the embedding-only score beside it (all None: the embedding features
    alone decided, as in the live answer)."""
    return {"verifier": s.verifier, "verifier_top_k": s.verifier_top_k,
            "embedding_score": s.embedding_score if s.verifier else None,
            "embedding_n_matches": s.embedding_n_matches if s.verifier else None}


def best_match(matches: list[Match]) -> tuple[str, Match] | None:
    """The match an idea is shown with: its realised (or dense: above-threshold) match of highest impact, else its
    direction match of highest p_direction, else the matcher's first-ranked paper."""
    counted = [m for m in matches if m.above_threshold]
    if counted:
        return "realised", max(counted, key=lambda m: (m.impact, m.similarity))
    direction = [m for m in matches if m.direction]
    if direction:
        return "direction", max(direction, key=lambda m: (m.p_direction or 0.0, m.similarity))
    return ("nearest", min(matches, key=lambda m: m.rank)) if matches else None


def run_ideas(session: Session, run: Run) -> list[dict]:
    """One flat row per idea of the run: origin, score and decisions, best match, the score's matcher and window."""
    ideas = session.scalars(select(Idea).where(Idea.run_id == run.id).order_by(Idea.pk).options(
        selectinload(Idea.score).selectinload(Score.matches))).all()
    classes = load_prior_art(session, [i.score.id for i in ideas if i.score is not None]).set_index("score_id")
    rows = []
    for idea in ideas:
        s = idea.score
        found = best_match(list(s.matches)) if s else None
        kind, m = found if found else (None, None)
        rows.append({
            "idea_pk": idea.pk, "idea_id": idea.idea_id, "run_id": run.id, "system": run.system, "run": run.label,
            "generator": idea.generator, "topic": idea.topic, "title": idea.title, "file": idea.origin_file,
            "scored": s is not None, "score": s.score if s else None, "matched": s.matched if s else None,
            "n_matches": s.n_matches if s else None, "direction_score": s.direction_score if s else None,
            "n_direction_matches": s.n_direction_matches if s else None,
            "direction": bool(s.n_direction_matches) if s and s.n_direction_matches is not None else None,
            "best_kind": kind, "best_paper_id": m.paper_id if m else None, "best_title": m.title if m else None,
            "best_venue": m.venue if m else None, "best_similarity": m.similarity if m else None,
            "best_p_realised": m.p_realised if m else None, "best_p_direction": m.p_direction if m else None,
            "best_p_method": m.p_method if m else None, "best_impact": m.impact if m else None,
            "shape": s.shape if s else None, "warnings": s.warnings if s else None,
            "best_verifier_p_direction": m.verifier_p_direction if m else None,
            "best_verifier_p_realised": m.verifier_p_realised if m else None,
            **(verifier_of(s) if s else dict.fromkeys(("verifier", "verifier_top_k", "embedding_score",
                                                      "embedding_n_matches"))),
            "matcher": (s.matcher or "dense") if s else None, "matcher_version": s.matcher_version if s else None,
            "thresholds": (s.thresholds or {"theta": s.theta}) if s else None, "model": s.model if s else None,
            "index_version": s.index_version if s else None, "cutoff": s.cutoff.isoformat() if s else None,
            "window_end": s.window_end.isoformat() if s else None,
            # the prior-art classes (None: scored without prior art)
            **{f"prior_art_{c}": classes.at[s.id, c] if s is not None and s.id in classes.index else None
               for c in ("class_realised", "class_direction")},
        })
    return rows


def matcher_label(matcher: str | None, version: str | None, thresholds: dict | None) -> str:
    """The match rule a score was made with, as a plot names it (theta decides nothing on a hybrid index): each
    decision's thresholds per idea shape; a matcher without a realised model realises by direction and method."""
    t = thresholds or {}
    if matcher == "hybrid":
        def rule(decision: str) -> str:
            return "/".join(f"{shape} {value:.2f}" for shape, value in (t.get(decision) or {}).items()) or "–"
        decisions = [d for d in ("realised", "direction", "method") if d in t] or ["realised", "direction"]
        both = "" if "realised" in decisions else " (realised: both)"
        return f"hybrid matcher {version or ''}: " + ", ".join(f"p {d} ≥ {rule(d)}" for d in decisions) + both
    return f"dense matcher: cosine ≥ θ {t.get('theta', '–')}"


def matcher_labels(session: Session, score_ids) -> list[str]:
    """The distinct match rules of these scores, each as a plot title names it, most used first."""
    ids = [int(i) for i in score_ids]
    counts: dict[str, int] = {}
    for start in range(0, len(ids), 500):
        for matcher, version, thresholds, theta in session.execute(
                select(Score.matcher, Score.matcher_version, Score.thresholds, Score.theta)
                .where(Score.id.in_(ids[start:start + 500]))):
            label = matcher_label(matcher or "dense", version, thresholds or {"theta": theta})
            counts[label] = counts.get(label, 0) + 1
    return sorted(counts, key=lambda k: -counts[k])


def run_scores(session: Session, run: Run) -> dict:
    ideas = session.scalars(select(Idea).where(Idea.run_id == run.id).order_by(Idea.pk).options(
        selectinload(Idea.score).selectinload(Score.matches))).all()
    prior = stored_prior_art(session, [i.score.id for i in ideas if i.score is not None])
    out = []
    for idea in ideas:
        s = idea.score
        if s is None:
            continue
        out.append({
            "id": idea.idea_id, "problem": idea.problem, "method": idea.method, "text": idea.text,
            "origin": origin_of(idea),
            "score": s.score, "matched": s.matched, "model": s.model, "theta": s.theta,
            "index_version": s.index_version, "cutoff": s.cutoff.isoformat(),
            "window": {"start": s.cutoff.isoformat(), "end": s.window_end.isoformat()}, "top_k": s.top_k,
            "leak_risk": s.leak_risk, "citation_normalisation": s.citation_normalisation,
            "scored_at": s.scored_at.isoformat(), "matcher": s.matcher or "dense",
            "matcher_version": s.matcher_version, "thresholds": s.thresholds or {"theta": s.theta},
            "n_matches": s.n_matches, "direction_score": s.direction_score,
            "n_direction_matches": s.n_direction_matches, "shape": s.shape, "warnings": s.warnings,
            **verifier_of(s),
            "matches": [{"paper_id": m.paper_id, "title": m.title, "venue": m.venue, "year": m.year,
                         "citations": m.citations, "similarity": m.similarity, "impact": m.impact,
                         "above_threshold": m.above_threshold, "p_realised": m.p_realised,
                         "p_direction": m.p_direction, "p_method": m.p_method, "realised": m.realised,
                         "direction": m.direction, "evidence": evidence_of(m), **match_verdict_of(m)}
                        for m in s.matches],
            # the look-back side as the live answer gave it (null: scored without prior art)
            "prior_art": prior_art_out(prior[s.id]).model_dump() if s.id in prior else None,
            "lookback_window": window_of(prior[s.id]) if s.id in prior else None,
        })
    return {"run_id": run.id, "system": run.system, "run": run.label, "scores": out}
