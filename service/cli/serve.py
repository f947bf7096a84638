"""`hindsight serve`: its own module, so that starting the server imports no scoring code before uvicorn does."""

import typer

from service.cli.common import ready_settings


def serve(host: str = typer.Option("127.0.0.1", help="Bind address."),
          port: int = typer.Option(8000, help="Port."),
          workers: int = typer.Option(1, help="Worker processes."),
          log_level: str = typer.Option("info")) -> None:
    """Run the HTTP API (like uvicorn); docs at /docs."""
    import uvicorn

    ready_settings()
    uvicorn.run("service.app:create_app", factory=True, host=host, port=port, workers=workers, log_level=log_level)
