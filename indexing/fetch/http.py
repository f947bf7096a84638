"""One HTTP client and one retry policy (settings.fetch.retry, a Retry) for the scholarly APIs.

Retries (exponential backoff with full jitter, tenacity) cover 429, 5xx, connection errors, timeouts and bodies
that arrive cut short. A Retry-After header is honoured when sent. A response that says the daily budget is spent
stops the fetch at once instead of hammering the service; so does a Retry-After longer than the configured wait.
"""

import json
import re
from collections.abc import Callable
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from indexing.retry import TRANSIENT, Pacer, Retryable, backoff, reason, retry_after_seconds
from indexing.settings import Retry, Settings

__all__ = ["TRANSIENT", "ApiRejected", "BudgetExhausted", "Classifier", "FetchError", "Pacer", "Retry", "Retryable",
           "Verdict", "describe", "error_text", "make_client", "redact", "request_json", "retry_after_seconds"]

SECRET_PARAMS = ("api_key",)
USER_AGENT = "hindsight/0.1 (research corpus fetch)"


class FetchError(RuntimeError):
    """The fetch stopped: the pages before stay ingested, the failed page wrote nothing; rerun to resume."""


class BudgetExhausted(FetchError):
    """The API's daily budget is spent (or it asks for a longer wait than allowed): stop, do not retry."""


class ApiRejected(FetchError):
    """The API refused the request itself (bad filter, bad or missing key): retrying cannot help."""


# What a source says about a non-2xx response: None for the default rule (429/5xx retry, others stop), or
# ("retry" | "exhausted" | "reject", message).
Verdict = tuple[str, str] | None
Classifier = Callable[[httpx.Response], Verdict]


def make_client(settings: Settings, *, base_url: str, headers: dict[str, str] | None = None) -> httpx.Client:
    """The one client factory: base URL, timeout, User-Agent with the contact email, gzip."""
    if not base_url.startswith(("http://", "https://")):
        raise ApiRejected(f"base URL {base_url!r} must start with http:// or https://")
    agent = USER_AGENT + (f" mailto:{settings.fetch.contact_email}" if settings.fetch.contact_email else "")
    return httpx.Client(base_url=base_url.rstrip("/") + "/", timeout=settings.fetch.retry.timeout,
                        headers={"User-Agent": agent, "Accept": "application/json", **(headers or {})},
                        follow_redirects=True)


def redact(params: dict | None) -> dict:
    return {k: ("***" if k in SECRET_PARAMS else v) for k, v in (params or {}).items()}


def describe(method: str, path: str, params: dict | None) -> str:
    shown = "&".join(f"{k}={v}" for k, v in redact(params).items())
    return f"{method} {path}{'?' + shown if shown else ''}"


def error_text(resp: httpx.Response) -> str:
    """The API's own words: {error, message} JSON, or the start of an HTML/text body."""
    try:
        body = resp.json()
    except ValueError:
        text = " ".join(re.sub(r"<[^>]*>", " ", resp.text).split())  # an HTML error page: its words
        return text[:200] or resp.reason_phrase
    if isinstance(body, dict):
        parts = [str(body[k]) for k in ("error", "message") if body.get(k)]
        return ": ".join(parts)[:500] or json.dumps(body)[:200]
    return json.dumps(body)[:200]


def request_json(client: httpx.Client, method: str, path: str, *, retry: Retry, pacer: Pacer,
                 params: dict | None = None, json_body=None, classify: Classifier | None = None,
                 on_retry: Callable[[str, float], None] | None = None, hint: str = "") -> tuple[Any, bytes]:
    """The parsed JSON body and its bytes as served, after retries; raises a FetchError subclass when it stops.

    hint is added to the message when the request gives up still throttled (429)."""
    where = describe(method, path, params)

    def attempt() -> tuple[object, bytes]:
        pacer.wait()
        resp = client.request(method, path, params=params, json=json_body)
        if resp.status_code >= 400:
            _judge(resp, where, retry, classify)
        body = resp.content
        try:
            return json.loads(body), body
        except ValueError as exc:  # cut short by a proxy with a matching Content-Length, or not JSON at all
            raise Retryable(f"{resp.status_code} with a broken JSON body ({len(body)} bytes: {exc})") from None

    def before_sleep(state: RetryCallState) -> None:
        if on_retry:
            on_retry(f"{where}: {reason(state.outcome.exception() if state.outcome else None)}", state.upcoming_sleep)

    retrying = Retrying(stop=stop_after_attempt(retry.attempts), wait=backoff(retry.backoff_min, retry.backoff_max),
                        reraise=True, retry=retry_if_exception_type(TRANSIENT), before_sleep=before_sleep)
    try:
        return retrying(attempt)
    except httpx.InvalidURL as exc:
        raise ApiRejected(f"{where}: {exc}") from None
    except TRANSIENT as exc:
        throttled = isinstance(exc, Retryable) and str(exc).startswith("429")
        raise FetchError(f"{where}: gave up after {retry.attempts} attempt(s); last error: {reason(exc)}. "
                         "Nothing from this page was written; run the same command again to resume."
                         + (hint if throttled else "")) from None
    except httpx.HTTPError as exc:  # not transient (an unsupported scheme, too many redirects)
        raise ApiRejected(f"{where}: {reason(exc)}") from None


def _judge(resp: httpx.Response, where: str, retry: Retry, classify: Classifier | None) -> None:
    """Raise Retryable, BudgetExhausted or ApiRejected for a non-2xx response."""
    status, text = resp.status_code, error_text(resp)
    verdict = classify(resp) if classify else None
    if verdict is None:
        kind = "retry" if status == 429 or status >= 500 else "reject"
        verdict = (kind, f"{status} {text}")
    kind, message = verdict
    if kind == "exhausted":
        raise BudgetExhausted(f"{where}: {message}. Stopped without retrying; nothing from this page was written. "
                              "Run the same command again after the reset to resume.")
    if kind == "reject":
        raise ApiRejected(f"{where}: the API refused the request: {message}")
    wait = retry_after_seconds(resp.headers.get("Retry-After"))
    if wait is not None and wait > retry.max_wait:
        raise BudgetExhausted(f"{where}: {status}, and the server asks to wait {wait:.0f} s (Retry-After), longer "
                              f"than HINDSIGHT_FETCH_MAX_WAIT ({retry.max_wait:.0f} s). Nothing from this page was "
                              "written; run the same command again later to resume.")
    raise Retryable(message + (f" (Retry-After {wait:g} s)" if wait is not None else ""), retry_after=wait)
