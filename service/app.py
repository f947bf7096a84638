"""FastAPI application factory."""

from fastapi import FastAPI


def create_app() -> FastAPI:
    app = FastAPI(title="HindSight", version="0.1.0",
                  description="Time-split, impact-grounded evaluation of research-idea generators.")
    return app


app = create_app()
