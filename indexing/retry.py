"""The retry pieces every HTTP client here shares: what counts as transient, Retry-After, jittered backoff, pacing.

indexing.fetch.http (the scholarly APIs) and indexing.llm.endpoint (chat endpoints) build their retry
loops from these, so both treat throttling, server errors and broken bodies the same way."""

import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

import httpx
from tenacity import RetryCallState, wait_random_exponential


class Retryable(Exception):
    """A transient failure: throttled, a server error or a broken body."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# transient transport failures; an unsupported scheme or a bad URL is not worth a second attempt
TRANSIENT = (Retryable, httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError,
             httpx.DecodingError)


class Pacer:
    """At most one request start per `interval` seconds (safe to share between threads)."""

    def __init__(self, interval: float) -> None:
        self.interval, self._last = interval, 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            delay = self._last + self.interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._last = time.monotonic()


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def backoff(minimum: float, maximum: float) -> Callable[[RetryCallState], float]:
    """Exponential backoff with full jitter, except after a Retryable that carries the server's own wait."""
    jittered = wait_random_exponential(multiplier=minimum, max=maximum)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, Retryable) and exc.retry_after is not None:
            return exc.retry_after  # the server said how long; the caller has checked it against its longest wait
        return jittered(state)

    return wait


def reason(exc: BaseException | None) -> str:
    """A failure in words: timeouts and connection failures named as such, others by their message."""
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    if isinstance(exc, httpx.TransportError):
        return f"connection failed ({type(exc).__name__}: {exc})"
    return str(exc)
