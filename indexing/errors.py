"""The one base of the domain's refusals: an error that knows its HTTP status, the field at fault and its message.

The library raises these; the service answers every one of them through one handler (service.errors), and the CLI
prints its text. 422: the request breaks a rule of its own; 404: a named thing is not there; 409: what the store or
the index holds refuses it; 413: too large; 503: not ready, retry later."""

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
