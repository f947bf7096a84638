"""`hindsight serve`: its own module, so that starting the server imports no scoring code before uvicorn does."""

import ipaddress
import os
import secrets

import typer

from indexing.settings import Settings, get_settings
from service.cli.common import ready_settings


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach a server bound to host."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def dashboard_url(host: str, port: int, token: str | None = None) -> str:
    """The dashboard's address on host:port, carrying the admin token when given."""
    bare = host.strip("[]")
    shown = f"[{bare}]" if ":" in bare else bare
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def one_time_token(host: str, settings: Settings) -> str | None:
    """A fresh admin token for this server process when it binds loopback and none is configured, else None.

    Set in the environment (and the settings read again), so create_app in uvicorn and any worker it spawns use it.
    """
    if settings.service.admin_secret() is not None or not is_loopback(host):
        return None
    token = secrets.token_urlsafe(32)
    os.environ["HINDSIGHT_ADMIN_TOKEN"] = token
    get_settings.cache_clear()
    return token


def serve(host: str = typer.Option("127.0.0.1", help="Bind address."),
          port: int = typer.Option(8000, help="Port."),
          workers: int = typer.Option(1, help="Worker processes."),
          log_level: str = typer.Option("info")) -> None:
    """Run the HTTP API (like uvicorn); docs at /docs."""
    import uvicorn

    settings = ready_settings()
    token = one_time_token(host, settings)
    if token:
        typer.echo(f"Dashboard (with a one-time admin token for this server; labelling and other admin calls use "
                   f"it):\n    {dashboard_url(host, port, token)}")
    else:
        typer.echo(f"Dashboard: {dashboard_url(host, port)}")
        if settings.service.admin_secret() is None:
            typer.echo("Admin endpoints are off: set HINDSIGHT_ADMIN_TOKEN to turn them on (on a loopback host "
                       "a one-time token is made instead).")
    uvicorn.run("service.app:create_app", factory=True, host=host, port=port, workers=workers, log_level=log_level)
