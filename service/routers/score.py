"""POST /v1/score: embed ideas, retrieve, threshold, score, store; as JSON, or as a generator's files uploaded."""

from collections.abc import Callable, Coroutine
from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, Request, Response, Security, UploadFile
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field, JsonValue
from starlette.concurrency import run_in_threadpool

from indexing.errors import DomainError, TooLarge
from indexing.settings import Settings
from service.deps import ADMIN_TOKEN, HolderDep, SettingsDep, require_admin
from service.errors import ADMIN, BODY, errors
from service.scoring.flow import score_run
from service.ideas import FORMATS, ReadResult, SourceFile, mapping_named, read_files, unpack
from service.ideas.reader import MAPPINGS
from service.schemas import IsoDate, ScoreOptions, ScoreRequest, ScoreResponse
from service.state import IndexHolder
from service.uploads import read_within

MAPPING_NAMES: list[JsonValue] = [name for name in sorted(n for names in MAPPINGS.values() for n in names)]


class UploadOptions(ScoreOptions):
    """POST /v1/score as an upload: the options of a JSON request and those of reading a generator's files."""

    format: Literal[FORMATS] = "auto"  # type: ignore[valid-type]
    mapping: str | None = Field(None, max_length=64, json_schema_extra={"enum": MAPPING_NAMES},
                                description="Which fields make problem and method (a mapping of the layout read).")
    knowledge_cutoff: IsoDate | None = Field(None, json_schema_extra={"format": "date"}, description=(
        "Declare the system's knowledge cutoff (as PUT /v1/systems/{name}: needs the admin token)."))
    skip_invalid: bool = Field(False, description="Score the readable ideas and report the refused ones (default: "
                                                  "refuse the upload, nothing stored).")


FILES = {"type": "array", "minItems": 1, "items": {"type": "string", "format": "binary", "minLength": 1},
         "description": "One ideas file (HindSight JSONL, an AI-Researcher plan, an AI-Scientist ideas.json), "
                        "several (an AI-Researcher directory: name each part TOPIC/NAME.json to keep its topic), or a "
                        ".zip of a directory."}


def form_fields(model: type[BaseModel]) -> dict[str, Any]:
    """The model's fields as multipart form fields: a part is absent rather than null, so the null alternative of
    an optional field goes (a form cannot send a JSON null)."""
    out = {}
    for name, schema in model.model_json_schema()["properties"].items():
        options = [s for s in schema.pop("anyOf", []) if s.get("type") != "null"]
        schema = {**(options[0] if options else {}), **schema}
        schema.pop("title", None)
        if schema.get("default", 0) is None:
            del schema["default"]
        out[name] = schema
    return out


UPLOAD_FIELDS = {"files": FILES, **form_fields(UploadOptions)}
UPLOAD_BODY = {"requestBody": {"content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["files"], "properties": UPLOAD_FIELDS}}}}}


class ScoreRoute(APIRoute):
    """POST /v1/score answers a JSON body (ScoreRequest) and a multipart upload of files (score_upload)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        as_json = super().get_route_handler()
        as_upload = APIRoute(self.path, score_upload, methods=["POST"], response_model=ScoreResponse,
                             dependency_overrides_provider=self.dependency_overrides_provider).get_route_handler()

        async def handler(request: Request) -> Response:
            if request.headers.get("content-type", "").lower().startswith("multipart/form-data"):
                return await as_upload(request)
            return await as_json(request)

        return handler


router = APIRouter(prefix="/v1", tags=["scoring"], route_class=ScoreRoute)


def check_limits(req: ScoreRequest, max_ideas: int, max_chars: int) -> None:
    check_count(len(req.ideas), max_ideas)
    for i, idea in enumerate(req.ideas):
        for name in ("problem", "method", "text"):
            value = getattr(idea, name)
            if value and len(value) > max_chars:
                raise DomainError(f"ideas[{i}].{name} is {len(value)} characters; the limit is {max_chars} "
                                  "(HINDSIGHT_MAX_TEXT_CHARS)")
    seen: set[str] = set()
    for i, idea in enumerate(req.ideas):
        if idea.id in seen:
            raise DomainError(f"ideas[{i}].id {idea.id!r} is repeated in this request")
        seen.add(idea.id)


def check_count(ideas: int, max_ideas: int) -> None:
    if ideas > max_ideas:
        raise TooLarge(f"too many ideas: {ideas} > {max_ideas} per request (HINDSIGHT_MAX_IDEAS_PER_REQUEST)")


def as_json(answer: ScoreResponse) -> Response:
    """The answer as JSON, validated once (when it was made): a returned model would be validated again against
    response_model (in a threadpool hop for a plain `def`) and dumped through FastAPI's encoder."""
    return Response(answer.model_dump_json(), media_type="application/json")


def _score(settings: Settings, holder: IndexHolder, *, read: ReadResult, system: str, run: str, cutoff: str | None,
           until: str | None, top_k: int | None, matcher: str | None, knowledge_cutoff: str | None = None,
           upload: bool = False, prior_art: bool | None = None, lookback_days: int | None = None) -> ScoreResponse:
    loaded = holder.current()  # this request keeps this version even if a new one is published meanwhile
    # stored in its own transaction, committed before the answer; a locked database past the budget is a 503
    done = score_run(settings, loaded=loaded, embedder=holder.embedder_for(loaded), read=read, system=system,
                     run=run, knowledge_cutoff=knowledge_cutoff, cutoff=cutoff, until=until, top_k=top_k,
                     matcher=matcher, prior_art=prior_art, lookback_days=lookback_days)
    counts = {**read.counts(), "scored": len(done.results)} if upload else None  # uploads report what was read
    return ScoreResponse(**done.context.model_dump(), system=system, run=run, run_id=done.run_id, ideas=done.results,
                         read=counts, judge_scores=done.ratings)


async def score_upload(
        settings: SettingsDep, holder: HolderDep, files: Annotated[list[UploadFile], File()],
        form: Annotated[UploadOptions, Form()],
        authorization: Annotated[str | None, Security(ADMIN_TOKEN)] = None) -> Response:
    """A generator's files read as one run (see POST /v1/score)."""
    if form.knowledge_cutoff is not None:
        require_admin(settings, authorization)
    limit = settings.service.max_upload_bytes
    sources = [SourceFile(upload.filename or "upload", data)
               for upload, data in zip(files, await read_within(files, limit))]
    read = read_files(unpack(sources, limit=limit), form.format, mappings=mapping_named(form.mapping),
                      max_chars=settings.service.max_text_chars)
    read.require_ideas(form.skip_invalid)
    check_count(len(read.ideas), settings.service.max_ideas_per_request)
    declared = form.knowledge_cutoff.isoformat() if form.knowledge_cutoff else None
    return as_json(await run_in_threadpool(
        _score, settings, holder, read=read, system=form.system, run=form.run, cutoff=form.cutoff, until=form.until,
        top_k=form.top_k, matcher=form.matcher, knowledge_cutoff=declared, upload=True, prior_art=form.prior_art,
        lookback_days=form.lookback_days))


# A plain `def`: FastAPI runs it in a worker thread, so encoding never blocks the event loop.
@router.post("/score", response_model=ScoreResponse, responses=errors(*ADMIN, *BODY, 409, 422, 503),
             openapi_extra=UPLOAD_BODY)
def score(req: ScoreRequest, settings: SettingsDep, holder: HolderDep) -> Response:
    """Score ideas against the current index version and store them under (system, run). The same path takes a
    multipart upload of a generator's files (see the multipart body): the answer adds `read` (read = scored +
    refused, refusals by file, record and field) and `judge_scores` (AI-Scientist's own ratings, stored as judge
    `ai-scientist-self`)."""
    check_limits(req, settings.service.max_ideas_per_request, settings.service.max_text_chars)
    return as_json(_score(settings, holder, read=ReadResult.of(req.ideas), system=req.system, run=req.run,
                          cutoff=req.cutoff, until=req.until, top_k=req.top_k, matcher=req.matcher,
                          prior_art=req.prior_art, lookback_days=req.lookback_days))
