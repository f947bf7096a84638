"""FastAPI application factory."""

from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.middleware.body_limit import RequestBodyLimitMiddleware

from indexing.db import migrate
from indexing.settings import Settings, get_settings
from service import errors
from service.jobs import Jobs
from service.routers import (
    analysis, corpus, dashboard, health, index, judge_scores, metrics, papers, runs, score, systems, verify,
)
from service.routers import labels as labels_router
from service.routers import llm_judge as llm_judge_router
from service.routers import report as report_router
from service.state import IndexHolder
from service.threads import apply_scoring_threads

MULTIPART_SLACK = 64 * 1024  # boundaries and part headers around an upload of the allowed size


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        migrate(settings.db_path)
        apply_scoring_threads(settings.service.scoring_threads)
        app.state.holder.refresh()
        yield
        app.state.jobs.shutdown()

    app = FastAPI(title="HindSight", version="0.1.0", lifespan=lifespan,
                  description="Time-split, impact-grounded evaluation of research-idea generators.")
    # Starlette's body limit: a declared Content-Length over it is refused at the first read (a "1 GB" header with a
    # few bytes behind it never holds a worker), a chunked body that grows past it is cut off. Its answer is a
    # plain "Content Too Large"; NameBodyLimit, outside it, makes that the ErrorOut 413 naming the setting.
    app.add_middleware(RequestBodyLimitMiddleware, max_body_size=settings.service.max_upload_bytes + MULTIPART_SLACK)
    app.add_middleware(errors.NameBodyLimit, limit=settings.service.max_upload_bytes)
    errors.install(app)
    app.state.settings = settings
    app.state.holder = IndexHolder(settings)
    app.state.jobs = Jobs()
    for module in (health, score, index, corpus, papers, runs, verify, judge_scores, systems, analysis, metrics,
                   dashboard):
        app.include_router(module.router)
    app.include_router(labels_router.router)
    app.include_router(llm_judge_router.router)
    app.include_router(report_router.router)
    app.mount("/static", StaticFiles(directory=dashboard.STATIC_DIR), name="static")
    return app
