"""FastAPI application factory."""

import json
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles

from indexing.db import migrate
from indexing.settings import Settings, get_settings
from service.jobs import Jobs
from service.limits import BodyLimit
from service.routers import analysis, dashboard, health, index, judges, metrics, papers, runs, score, systems
from service.state import IndexHolder


async def validation_error(request: Request, exc: RequestValidationError) -> Response:
    """FastAPI's 422, made ASCII: the echoed input may hold an unpaired surrogate, which UTF-8 cannot encode (a 500)."""
    body = json.dumps({"detail": jsonable_encoder(exc.errors())}, ensure_ascii=True)
    return Response(body, status_code=422, media_type="application/json")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        migrate(settings.db_path)
        app.state.holder.refresh()
        yield
        app.state.jobs.shutdown()

    app = FastAPI(title="HindSight", version="0.1.0", lifespan=lifespan,
                  description="Time-split, impact-grounded evaluation of research-idea generators.")
    app.add_middleware(BodyLimit, limit=settings.max_upload_bytes)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.state.settings = settings
    app.state.holder = IndexHolder(settings)
    app.state.jobs = Jobs()
    for module in (health, score, index, papers, runs, judges, systems, analysis, metrics, dashboard):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=dashboard.STATIC_DIR), name="static")
    return app
