"""What a score was made with (its context), storing scores under a run, and the columns a stored match of either
side (a score's `matches`, prior art's `prior_art_matches`) shares."""

from datetime import date
from typing import Protocol

from sqlalchemy import delete, select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.orm import Session

from indexing.matcher.serving import view_of
from indexing.matcher.verifier.base import Verdict
from indexing.matcher.verifier.step import VerifierStep
from indexing.models import Idea, Match, Run, Score, utcnow
from indexing.versions import LoadedIndex
from service.scoring.answer import answer_context
from service.schemas import IdeaIn, IdeaScoreOut, MatchOut, PriorArtMatchOut, ScoringContext, VerdictOut
from service.scoring.plan import WindowPlan


class StoredMatch(Protocol):
    """A stored match of either side (indexing.models.Match, service.prior_art.models.PriorArtMatch): the columns
    evidence_of and match_verdict_of read back."""

    @property
    def evidence_sentence(self) -> str | None: ...
    @property
    def problem_sentence(self) -> str | None: ...
    @property
    def shared_terms(self) -> list | None: ...
    @property
    def verifier_p_direction(self) -> float | None: ...
    @property
    def verifier_p_realised(self) -> float | None: ...
    @property
    def verifier_source(self) -> str | None: ...
    @property
    def embedding_realised(self) -> bool | None: ...
    @property
    def embedding_direction(self) -> bool | None: ...


def decision_columns(m: MatchOut | PriorArtMatchOut) -> dict:
    """The columns a stored match of either side shares: similarity, decisions, evidence, verifier (read back by
    evidence_of and match_verdict_of)."""
    return dict(similarity=m.similarity, realised=m.realised, direction=m.direction, p_realised=m.p_realised,
                p_direction=m.p_direction, p_method=m.p_method,
                evidence_sentence=m.evidence.sentence if m.evidence else None,
                problem_sentence=m.evidence.problem_sentence if m.evidence else None,
                shared_terms=m.evidence.shared_terms if m.evidence else None,
                **verdict_columns(m.verifier), embedding_realised=m.embedding_realised,
                embedding_direction=m.embedding_direction)


def verdict_columns(verdict: Verdict | VerdictOut | None) -> dict:
    """The verifier's columns of a stored match of either side (all None: no verifier read it)."""
    return dict(verifier_p_direction=verdict.p_direction if verdict else None,
                verifier_p_realised=verdict.p_realised if verdict else None,
                verifier_source=verdict.source if verdict else None)


def evidence_of(m: StoredMatch) -> dict | None:
    """A stored match's evidence (either side) as the live answer gave it; None when the matcher gave none (dense,
    or a look-back match past the evidence top)."""
    if m.evidence_sentence is None and m.problem_sentence is None and m.shared_terms is None:
        return None
    return {"sentence": m.evidence_sentence, "problem_sentence": m.problem_sentence,
            "shared_terms": m.shared_terms or []}


def match_verdict_of(m: StoredMatch) -> dict:
    """The verifier's reading of a stored match of either side (None when not read) and the embedding-only decision
    (None when no verifier decided, as in the live answer)."""
    verdict = None if m.verifier_p_direction is None else {
        "p_direction": m.verifier_p_direction, "p_realised": m.verifier_p_realised, "source": m.verifier_source}
    return {"verifier": verdict, "embedding_realised": m.embedding_realised,
            "embedding_direction": m.embedding_direction}


def context_of(loaded: LoadedIndex, top_k: int, plan: WindowPlan | None = None,
               matcher: str | None = None, verifier: VerifierStep | None = None) -> ScoringContext:
    """What a score in the plan's window (default: the built one) under the asked matcher is made with (see
    answer.answer_context), for callers that have no view yet."""
    window = plan.window if plan else loaded.resolve_window()
    impacts = plan.impacts if plan and plan.impacts is not None else loaded.window_impacts(window)
    return answer_context(view_of(loaded, window.range, matcher), window=window, impacts=impacts, top_k=top_k,
                          plan=plan, verifier=verifier)


ORIGIN_COLUMNS = ("origin_file", "generator", "topic", "title")


def origin_columns(idea: IdeaIn) -> dict:
    o = idea.origin
    return dict(zip(ORIGIN_COLUMNS, (o.file, o.generator, o.topic, o.title) if o else (None,) * 4))


def get_or_create_run(session: Session, *, system: str, label: str) -> Run:
    """An upsert, so parallel first requests into one run never meet the (system, label) unique constraint."""
    session.execute(insert(Run).values(system=system, label=label, created_at=utcnow())
                    .on_conflict_do_nothing(index_elements=["system", "label"]))
    return session.scalars(select(Run).where(Run.system == system, Run.label == label)).one()


def store_scores(session: Session, *, system: str, label: str, ideas: list[IdeaIn], results: list[IdeaScoreOut],
                 context: ScoringContext) -> int:
    """Store (or replace) each idea's score and matches under the run; returns the run id.

    Call it in one transaction per request (see write_transaction): a repeated idea id keeps the score of the
    request that commits last, and each idea has exactly one score whatever the interleaving."""
    run = get_or_create_run(session, system=system, label=label)
    cutoff, window_end = date.fromisoformat(context.cutoff), date.fromisoformat(context.window["end"])
    normalisation, now = context.impact.get("citation_normalisation", "global"), utcnow()
    # upsert the ideas: the first write takes SQLite's write lock, so no other request interleaves from here on
    upsert = insert(Idea).values([{"run_id": run.id, "idea_id": i.id, "problem": i.problem, "method": i.method,
                                   "text": i.text, **origin_columns(i)} for i in ideas])
    session.execute(upsert.on_conflict_do_update(index_elements=["run_id", "idea_id"], set_={
        name: getattr(upsert.excluded, name) for name in ("problem", "method", "text", *ORIGIN_COLUMNS)}))
    pks = dict(session.execute(select(Idea.idea_id, Idea.pk).where(
        Idea.run_id == run.id, Idea.idea_id.in_([i.id for i in ideas]))).all())
    session.execute(delete(Score).where(Score.idea_pk.in_(pks.values())))  # their matches go by ON DELETE CASCADE
    # two bulk inserts (Core executemany), not an ORM object per score and per match
    scored = session.execute(insert(Score).returning(Score.id, sort_by_parameter_order=True), [dict(
        idea_pk=pks[idea.id], score=result.score, matched=result.matched, model=context.model, theta=context.theta,
        index_version=context.index_version, cutoff=cutoff, window_end=window_end, top_k=context.top_k,
        leak_risk=context.leak_risk, citation_normalisation=normalisation, matcher=context.matcher,
        matcher_version=context.matcher_version, thresholds=context.thresholds, n_matches=result.n_matches,
        direction_score=result.direction_score, n_direction_matches=result.n_direction_matches,
        warnings=result.warnings, shape=result.shape, verifier=context.verifier,
        verifier_top_k=context.verifier_top_k, embedding_score=result.embedding_score,
        embedding_n_matches=result.embedding_n_matches, scored_at=now)
        for idea, result in zip(ideas, results)]).scalars().all()
    matches = [dict(score_id=score_id, rank=r, paper_id=m.paper_id, title=m.title, venue=m.venue, year=m.year,
                    citations=m.citations, impact=m.impact, above_threshold=m.above_threshold,
                    **decision_columns(m))
               for score_id, result in zip(scored, results) for r, m in enumerate(result.matches, start=1)]
    if matches:
        session.execute(insert(Match), matches)
    session.flush()
    return run.id
