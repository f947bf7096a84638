"""POST /v1/score: embed ideas, retrieve, threshold, score, store."""

from fastapi import APIRouter, HTTPException

from indexing.db import session_scope, write_transaction
from indexing.matcher.corpus import MatcherUnavailable
from indexing.windows import WindowError
from service.deps import HolderDep, SettingsDep
from service.errors import BODY, errors
from service.matching import score_ideas
from service.schemas import ScoreRequest, ScoreResponse
from service.scoring import context_of, store_scores
from service.state import NoIndex
from service.systems import plan_window

router = APIRouter(prefix="/v1", tags=["scoring"])


def check_limits(req: ScoreRequest, max_ideas: int, max_chars: int) -> None:
    if len(req.ideas) > max_ideas:
        raise HTTPException(413, f"too many ideas: {len(req.ideas)} > {max_ideas} per request "
                                 "(HINDSIGHT_MAX_IDEAS_PER_REQUEST)")
    for i, idea in enumerate(req.ideas):
        for name in ("problem", "method", "text"):
            value = getattr(idea, name)
            if value and len(value) > max_chars:
                raise HTTPException(422, f"ideas[{i}].{name} is {len(value)} characters; the limit is {max_chars} "
                                         "(HINDSIGHT_MAX_TEXT_CHARS)")
    seen: set[str] = set()
    for i, idea in enumerate(req.ideas):
        if idea.id in seen:
            raise HTTPException(422, f"ideas[{i}].id {idea.id!r} is repeated in this request")
        seen.add(idea.id)


# A plain `def`: FastAPI runs it in a worker thread, so encoding never blocks the event loop.
@router.post("/score", response_model=ScoreResponse, responses=errors(*BODY, 422, 503))
def score(req: ScoreRequest, settings: SettingsDep, holder: HolderDep) -> ScoreResponse:
    """Score ideas against the current index version and store them under (system, run)."""
    check_limits(req, settings.max_ideas_per_request, settings.max_text_chars)
    try:
        loaded = holder.current()  # this request keeps this version even if a new one is published meanwhile
        embedder = holder.embedder_for(loaded)
    except NoIndex as exc:
        raise HTTPException(503, str(exc)) from None
    try:
        with session_scope(settings.db_path) as session:  # a read: the system's declared knowledge cutoff
            plan = plan_window(session, loaded, system=req.system, cutoff=req.cutoff, until=req.until)
    except WindowError as exc:
        raise HTTPException(422, exc.detail()) from None
    top_k = req.top_k or settings.top_k
    try:
        context = context_of(loaded, top_k, plan, req.matcher)
        results = score_ideas(req.ideas, loaded=loaded, embedder=embedder, top_k=top_k, window=plan.window,
                              matcher=context.matcher)
    except MatcherUnavailable as exc:
        raise HTTPException(422, str(exc)) from None
    # its own transaction, committed before the answer; retried while SQLite is locked, else 503 + Retry-After
    run_id = write_transaction(settings.db_path, lambda session: store_scores(
        session, system=req.system, label=req.run, ideas=req.ideas, results=results, context=context),
        budget=settings.write_retry_seconds)
    return ScoreResponse(**context.model_dump(), system=req.system, run=req.run, run_id=run_id, ideas=results)
