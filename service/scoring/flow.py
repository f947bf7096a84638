"""Scoring a set of ideas as one stored run, the flow `hindsight score` and POST /v1/score share. It walks down the
steps once each: plan the window (plan; a declared knowledge cutoff first), the corpus view (which rule decides,
the window's BM25), decide (the matcher), shape (answer: the answers and what they were made with), store."""

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session

from indexing.db import session_scope, write_transaction
from indexing.embedders import Embedder
from indexing.matcher.serving import CorpusView, decide, embed, facets_of, token_counts, view_of
from indexing.matcher.verifier.step import VerifierStep
from indexing.settings import Settings
from indexing.versions import LoadedIndex
from service.ideas import ReadResult
from service.judge_scores import store_ratings
from service.scoring.answer import answer_context, shape
from service.prior_art.side import PriorArtPlan, look_back, plan_prior_art
from service.prior_art.store import store_prior_art
from service.schemas import IdeaScoreOut, ScoringContext
from service.scoring.store import store_scores
from service.scoring.plan import WindowPlan, plan_window
from service.systems import set_system

BATCH = 32  # ideas per decide call: one progress step


@dataclass(frozen=True)
class ScoredRun:
    """A scored and stored run: what it was made with, each idea's answer, the run id, the ratings stored."""

    context: ScoringContext
    results: list[IdeaScoreOut]
    run_id: int
    ratings: dict | None


def score_run(settings: Settings, *, loaded: LoadedIndex, embedder: Embedder, read: ReadResult, system: str,
              run: str, knowledge_cutoff: str | None = None, cutoff: str | None = None, until: str | None = None,
              top_k: int | None = None, matcher: str | None = None, verifier: VerifierStep | None = None,
              prior_art: bool | None = None, lookback_days: int | None = None,
              progress: Callable[[int, int], None] | None = None) -> ScoredRun:
    """Score the ideas read against this index version and store them under (system, run), each write in its own
    transaction retried while SQLite is locked; progress(done, total) per batch. With prior art (default: the
    settings'), each idea's look-back window [cutoff - lookback_days, cutoff) is decided too, on the same vectors
    and by the same matcher (and verifier), and its class stored beside its score. SystemInputError, WindowError and
    a MatcherUnavailable of the version itself are raised before anything is written (a declared knowledge cutoff
    included); a MatcherUnavailable met while scoring, before the scores are stored."""
    def planned(session: Session) -> tuple[WindowPlan, CorpusView]:
        if knowledge_cutoff:  # declared first, so the run's default cutoff is the declared one
            set_system(session, name=system, knowledge_cutoff=knowledge_cutoff)
        plan = plan_window(session, loaded, system=system, cutoff=cutoff, until=until)
        return plan, view_of(loaded, plan.window.range, matcher)  # inside: MatcherUnavailable writes nothing

    if knowledge_cutoff:
        plan, view = write_transaction(settings.db_path, planned, budget=settings.service.write_retry_seconds)
    else:
        with session_scope(settings.db_path) as session:  # a read: the system's declared knowledge cutoff
            plan, view = planned(session)
    assert plan.impacts is not None  # plan_window's plans carry them
    k = top_k or settings.matcher.top_k
    before: PriorArtPlan | None = None
    if settings.matcher.prior_art if prior_art is None else prior_art:
        days = lookback_days or settings.matcher.prior_art_lookback_days
        before = plan_prior_art(loaded, cutoff=plan.window.start, days=days, matcher=matcher,
                                knowledge_cutoff=plan.knowledge_cutoff, evidence_top=settings.labels.labels_top_k)
    ideas = [r.idea for r in read.ideas]
    results: list[IdeaScoreOut] = []
    for start in range(0, len(ideas), BATCH):
        batch = ideas[start:start + BATCH]
        facets = [facets_of(embedder, problem=i.problem, method=i.method, text=i.text) for i in batch]
        counts = token_counts(embedder, facets)  # both sides read one tokenisation and one encode
        vectors = embed(embedder, facets, view.matcher, counts)
        decisions = decide(facets, view=view, embedder=embedder, top_k=k, with_evidence=True,
                           verifier=verifier, vectors=vectors, counts=counts)
        shaped = shape(batch, decisions, view=view, impacts=plan.impacts)
        if before is not None:  # the look-back side on the same vectors: its own K, the same matcher and verifier
            look_back(before, facets, shaped, embedder=embedder, top_k=k, vectors=vectors, counts=counts,
                      verifier=verifier)
        results += shaped
        if progress:
            progress(len(batch), len(ideas))
    context = answer_context(view, window=plan.window, impacts=plan.impacts, top_k=k, plan=plan, verifier=verifier)
    if before is not None:
        context = before.annotate(context)
    run_id, ratings = write_transaction(settings.db_path, lambda session: store_run(
        session, system=system, label=run, read=read, results=results, context=context),
        budget=settings.service.write_retry_seconds)
    return ScoredRun(context=context, results=results, run_id=run_id, ratings=ratings)


def store_run(session: Session, *, system: str, label: str, read: ReadResult, results: list[IdeaScoreOut],
              context: ScoringContext) -> tuple[int, dict | None]:
    """The run id, and what was stored of the generator's ratings (None when its files hold none)."""
    ideas = [r.idea for r in read.ideas]
    run_id = store_scores(session, system=system, label=label, ideas=ideas, results=results, context=context)
    store_prior_art(session, run_id=run_id, ideas=ideas, results=results, context=context)
    ratings = {r.idea.id: (r.judge, r.ratings) for r in read.ideas if r.judge and r.ratings}
    return run_id, store_ratings(session, run_id=run_id, ratings=ratings) if ratings else None
