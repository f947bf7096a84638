"""The API's one error model, the per-operation `responses=errors(...)` helper, and the handlers that make every
4xx/5xx answer take that shape.

A router documents what an operation can answer with `@router.get(..., responses=errors(404, 422))`; admin
operations add ADMIN (401, 403), operations with a body add BODY (400, 413). Every error body is an ErrorOut:
`detail` is a message, FastAPI's list of field errors (422 for a request that fails its schema), or a refused
file's report (422 with `message` and `errors`)."""

import json
from typing import Any, TypeVar

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.datastructures import Headers
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from indexing.db import DatabaseBusy, is_locked
from indexing.errors import DomainError

RETRY_AFTER_SECONDS = 2
E = TypeVar("E", bound=Exception)


class FieldError(BaseModel):
    """One field error, as FastAPI reports a request that fails its schema."""

    model_config = ConfigDict(extra="allow")
    loc: list[str | int]
    msg: str
    type: str


class FileReport(BaseModel):
    """A refused upload: why, and every row error by file, line and field."""

    model_config = ConfigDict(extra="allow")
    message: str
    errors: list[dict[str, Any]] = []


class ErrorOut(BaseModel):
    """Every 4xx/5xx answer of the API."""

    detail: str | list[FieldError] | FileReport = Field(
        description="A message; or the list of field errors of a request that fails its schema (422); or the "
                    "report of a refused file (422).")


DESCRIPTIONS = {
    400: "The body is not valid JSON (or too deeply nested to parse).",
    401: "Admin token missing: send 'Authorization: Bearer <token>'.",
    403: "Admin token wrong, or admin endpoints disabled (no HINDSIGHT_ADMIN_TOKEN on the server).",
    404: "Not found.",
    405: "Method not allowed.",
    409: "The store's or the index's contents refuse the request: a window outside the index's built range or with "
         "no paper in it, a matcher or verifier this server cannot run, a selection made ambiguous by several judges "
         "or windows; the message says what holds and which choice to make.",
    413: "Too large: the body exceeds HINDSIGHT_MAX_UPLOAD_BYTES, or too many ideas "
         "(HINDSIGHT_MAX_IDEAS_PER_REQUEST).",
    422: "The request fails its schema or a documented limit, or the uploaded file is refused.",
    503: "Not ready (no index loaded), the database stayed busy or its disk is full: retry after Retry-After.",
}
ADMIN = (401, 403)
BODY = (400, 413)


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: each code documented with ErrorOut (503 with its Retry-After header), as JSON also
    on a route whose own answer is not (FastAPI files `model` under the route's media type, text/html for a page)."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in sorted(set(codes)):
        out[code] = {"model": ErrorOut, "description": DESCRIPTIONS[code],
                     "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
        if code == 503:
            out[code]["headers"] = {"Retry-After": {"description": "Seconds to wait before retrying.",
                                                    "schema": {"type": "integer"}}}
    return out


def _json(status: int, detail: Any, headers: dict[str, str] | None = None) -> Response:
    """An ErrorOut answer; every 503 says when to retry (Retry-After, unless the headers name it already)."""
    if status == 503:
        headers = dict(headers or {})
        headers.setdefault("Retry-After", str(RETRY_AFTER_SECONDS))
    # ASCII: an echoed input may hold an unpaired surrogate, which UTF-8 cannot encode (it would be a 500)
    body = json.dumps({"detail": jsonable_encoder(detail)}, ensure_ascii=True)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _expect(exc: Exception, kind: type[E]) -> E:
    """exc as the exception type its handler is installed for (Starlette types every handler's exc as Exception)."""
    if not isinstance(exc, kind):
        raise TypeError(f"the {kind.__name__} handler was given a {type(exc).__name__}") from exc
    return exc


async def validation_error(request: Request, exc: Exception) -> Response:
    return _json(422, _expect(exc, RequestValidationError).errors())


async def http_error(request: Request, error: Exception) -> Response:
    exc = _expect(error, StarletteHTTPException)
    detail = exc.detail
    headers = dict(exc.headers or {})
    if exc.status_code == 413 and detail == "Content Too Large":  # a chunked body cut off by the body limit
        detail = body_limit_message(request.app.state.settings.service.max_upload_bytes, None)
        headers["Connection"] = "close"
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(allowed_methods(request))
    return _json(exc.status_code, detail, headers or None)


def allowed_methods(request: Request) -> list[str]:
    """Every method of every route on this path: Starlette's 405 names only the first route's. A path with routes of
    its own answers with theirs: a parameter route that also matches it (GET /v1/papers/{paper_id:path} for
    /v1/papers/fetch) is another resource in the OpenAPI document. Included routers are walked through FastAPI's
    route contexts: the app's own list holds one entry per router, which matches no path itself."""
    found = [(route.path_format, set(route.methods)) for route in iter_route_contexts(request.app.router.routes)
             if route.methods and route.matches(request.scope)[0] != Match.NONE]
    own = [methods for path, methods in found if "{" not in (path or "")]
    return sorted(set().union(*(own or [methods for _, methods in found])))


async def database_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, DatabaseBusy) or is_locked(exc):
        message = str(exc) if isinstance(exc, DatabaseBusy) else "the database is busy; try again shortly"
        return _json(503, message)
    if isinstance(exc, OperationalError) and "disk is full" in str(exc.orig):
        return _json(503, "the database cannot grow: the disk is full; nothing was written")
    return _json(500, "internal error")


async def domain_error(request: Request, error: Exception) -> Response:
    """Every refusal of the domain (indexing.errors.DomainError): its status and its detail; a 503 (no index loaded,
    the vector store unreachable) says when to retry."""
    exc = _expect(error, DomainError)
    return _json(exc.status, exc.detail())


def body_limit_message(limit: int, declared: str | None) -> str:
    size = f"of {declared} bytes " if declared and declared.isdigit() else ""
    return (f"request body {size}exceeds the limit of {limit} bytes (HINDSIGHT_MAX_UPLOAD_BYTES, plus 64 KB for "
            "multipart framing)")


class NameBodyLimit:
    """Starlette's RequestBodyLimitMiddleware answers a plain-text "Content Too Large" (it replaces whatever the app
    answers once a declared Content-Length is over the limit). Outside it, this rewrites that 413 alone into the
    ErrorOut shape with a message naming the limit; it counts nothing itself."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        replaced = False

        async def named(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 413:
                headers = dict(message.get("headers", []))
                if headers.get(b"content-type", b"").startswith(b"text/plain"):
                    declared = Headers(scope=scope).get("content-length")
                    body = json.dumps({"detail": body_limit_message(self.limit, declared)}).encode()
                    replaced = True
                    await send({"type": "http.response.start", "status": 413, "headers": [
                        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close")]})  # the rest of the body is never read
                    await send({"type": "http.response.body", "body": body})
                    return
            if not replaced:
                await send(message)

        await self.app(scope, receive, named)


def install(app: FastAPI) -> None:
    """Give every error answer the ErrorOut shape."""
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(DatabaseBusy, database_error)
    app.add_exception_handler(OperationalError, database_error)
    app.add_exception_handler(DomainError, domain_error)
