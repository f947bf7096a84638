"""The one base of the domain's refusals: an error that knows its HTTP status, the field at fault and its message.

The library raises these; the service answers every one of them through one handler (service.errors), and the CLI
prints its text. 422: the request breaks a rule of its own; 404: a named thing is not there; 409: what the store or
the index holds refuses it; 413: too large; 503: not ready, retry later. describe_error words any error (an OSError,
a database error) for an answer or a log line without absolute paths or SQL."""

from pathlib import Path
from typing import Any


class DomainError(Exception):
    """A refusal with its HTTP `status`, the `field` at fault (None when no one field is) and its `message`; the text
    is "field: message" when a field is named."""

    status: int = 422
    field: str | None = None

    def __init__(self, message: str, *, field: str | None = None, status: int | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.message = message
        if field is not None:
            self.field = field
        if status is not None:
            self.status = status

    def detail(self) -> Any:
        """The `detail` of the HTTP answer: the text, unless a subclass says more."""
        return str(self)


class NotFoundError(DomainError):
    """A named thing (a job, a paper, a task) is not there."""

    status = 404


class ConflictError(DomainError):
    """The state of the store, the index or a job refuses the request."""

    status = 409


class TooLarge(DomainError):
    """Over a documented size limit."""

    status = 413


class NotReady(DomainError):
    """Not ready yet (no index loaded, a store unreachable): retry later."""

    status = 503


def describe_error(exc: BaseException, home: Path) -> str:
    """An error as it may reach API answers: no absolute paths, no SQL statements."""
    from sqlalchemy.exc import DBAPIError  # SQLAlchemy loads where the database is used (docs/startup.md)

    if isinstance(exc, OSError) and exc.strerror:
        path = Path(str(exc.filename)) if exc.filename else None
        where = f": {path.relative_to(home) if path.is_relative_to(home) else path.name}" if path else ""
        return f"{type(exc).__name__}: {exc.strerror}{where}"
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        return f"{type(exc.orig).__name__}: {exc.orig}"
    text = f"{type(exc).__name__}: {exc}"
    for prefix in {str(home.resolve()), str(home)}:  # e.g. faiss names the file it failed to write
        text = text.replace(prefix, "$HINDSIGHT_HOME")
    return text
