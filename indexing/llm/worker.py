"""A model served by a worker process: the server's judge and verify jobs run llama.cpp there, so a native crash
(a segfault in a kernel, an abort) ends the worker and fails that job with its error while the server keeps serving.

The worker is a spawned interpreter (not a fork of the threaded server) that builds the model object once and then
answers method calls over a pipe, one at a time; after each answer it sends the attributes the caller reads (the
judge's call count, the verifier's revision). A worker that dies is a ModelUnavailable naming its signal and what it
was doing; the caller's own process never loads the model.
"""

import multiprocessing
import signal
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from indexing.llm.errors import ModelUnavailable

STOP = None  # what the caller sends to end the worker


def signal_name(code: int) -> str:
    """The signal that ended a process, from its negative exit code (-11: SIGSEGV)."""
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _attrs(obj: object, names: Sequence[str]) -> dict[str, Any]:
    return {n: getattr(obj, n) for n in names}


def _send_error(conn: Connection, exc: BaseException) -> None:
    try:
        conn.send(("error", exc, {}))
    except Exception:  # an exception that does not pickle travels as its text
        conn.send(("error", ModelUnavailable(f"{type(exc).__name__}: {exc}"), {}))


def _serve(conn: Connection, build: Callable[..., object], args: tuple, kwargs: dict[str, Any],
           names: Sequence[str]) -> None:
    """The worker's loop: build the model, then answer (method, args, kwargs) until STOP or the pipe closes."""
    try:
        obj = build(*args, **kwargs)
    except BaseException as exc:
        _send_error(conn, exc)
        return
    conn.send(("ready", None, _attrs(obj, names)))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is STOP:
            return
        method, call_args, kwargs = message
        try:
            result = getattr(obj, method)(*call_args, **kwargs)
        except BaseException as exc:
            _send_error(conn, exc)
            continue
        conn.send(("ok", result, _attrs(obj, names)))


class ModelProcess:
    """build(*args, **kwargs) run in a worker process; call(method, ...) runs obj.method(...) there and returns its
    result. attrs holds the names' latest values."""

    def __init__(self, build: Callable[..., object], args: tuple = (), kwargs: dict[str, Any] | None = None, *,
                 names: Sequence[str] = (), what: str = "the model") -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._what = what
        self._process = context.Process(target=_serve, args=(child, build, args, kwargs or {}, tuple(names)),
                                        daemon=True, name="hindsight-model")
        self._process.start()
        child.close()
        self.attrs: dict[str, Any] = {}
        self._receive(f"loading {what}")

    @property
    def pid(self) -> int | None:
        """The worker's process id."""
        return self._process.pid

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            self._conn.send((method, args, kwargs))
        except OSError:
            raise ModelUnavailable(self._death(method)) from None
        return self._receive(method)

    def _receive(self, doing: str) -> Any:
        try:
            kind, value, attrs = self._conn.recv()
        except (EOFError, OSError):
            raise ModelUnavailable(self._death(doing)) from None
        if kind == "error":
            raise value
        self.attrs.update(attrs)
        return value

    def _death(self, doing: str) -> str:
        self._process.join(10)
        code = self._process.exitcode
        if code is None:
            how = "stopped answering"
        elif code < 0:
            how = f"died with {signal_name(code)}"
        else:
            how = f"exited with status {code}"
        return (f"the process running {self._what} (pid {self._process.pid}) {how} while {doing}; "
                "nothing else was affected, and the answers stored before it are kept")

    def close(self) -> None:
        """End the worker (it frees the model's memory with it)."""
        if self._process.is_alive():
            try:
                self._conn.send(STOP)
            except OSError:
                pass
            self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(10)
        self._conn.close()
