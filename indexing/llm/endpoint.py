"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, a llama.cpp server, Ollama, a router), as the verifier and the
judge ask it: one POST {url}/chat/completions per body, read by the caller's reader.

Retries (the shared policy of indexing.retry) cover 429 (Retry-After honoured), 5xx, timeouts, connection failures
and replies that carry no answer; other 4xx stop at once with the endpoint's own message. Every request, retries
included, counts against a budget per endpoint object; a unit of work is not started unless the budget covers it.
The key never appears in a message. label_shares reads the labels' probabilities off the answer's top logprobs.
"""

import json
import logging
import math
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from indexing.llm.errors import ModelUnavailable
from indexing.llm.keys import endpoint_key
from indexing.retry import TRANSIENT, Pacer, Retryable, backoff, reason, retry_after_seconds
from indexing.settings import Retry, Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

TOP_LOGPROBS = 20  # OpenAI's most; vLLM's default --max-logprobs
MARKUP = " \t\n*_`'\"#>"  # tokens made only of these come before the answer word ("**No**")
USER_AGENT = "hindsight/0.1 (verifier)"


class EndpointRefused(ModelUnavailable):
    """The endpoint refused the request (bad key, unknown model, too long) or asks to wait too long: no retry."""


class EndpointFailed(ModelUnavailable):
    """No answer after every attempt (throttled, down, timing out, or answering neither Yes nor No)."""


class BudgetSpent(ModelUnavailable):
    """This verifier made the requests it may make; a rerun resumes (the verdict cache keeps what was read)."""


class Malformed(Retryable):
    """A 200 reply that carries no readable answer."""


def _top_logprobs(entry: dict) -> dict[str, float]:
    """token -> logprob of one answer token's alternatives; repeated token strings (byte pieces) are summed."""
    probs: dict[str, float] = {}
    for alt in entry.get("top_logprobs") or []:
        if isinstance(alt, dict) and isinstance(alt.get("token"), str) and isinstance(alt.get("logprob"), int | float):
            probs[alt["token"]] = probs.get(alt["token"], 0.0) + math.exp(alt["logprob"])
    return {t: math.log(p) for t, p in probs.items() if p > 0}


def _body_error(body: dict) -> str:
    """The error a body carries in place of choices (a router's upstream failure), if any."""
    err = body.get("error")
    if isinstance(err, dict):
        return str(err.get("message") or json.dumps(err))[:300]
    return str(err or body.get("message") or "")[:300]


def reply_of(body: object) -> tuple[list, str | None]:
    """(the answer tokens' logprob entries, the answer text) of one chat.completion body; Malformed without a
    choice."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        said = _body_error(body) if isinstance(body, dict) else ""
        raise Malformed("a reply without choices" + (f" ({said})" if said else ""))
    choice = choices[0]
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    message = choice.get("message")
    text = message.get("content") if isinstance(message, dict) else None
    return (content if isinstance(content, list) else []), (text if isinstance(text, str) else None)


def label_shares(content: Sequence, labels: Mapping[str, Sequence[str]]) -> dict[str, float] | None:
    """Each label's probability, renormalised over the labels, from the top logprobs of the answer's first token
    that is not markup (labels: name -> its token forms); None when none of them is there.

    A label whose forms start another's ("1" of "10" where the vocabulary splits digits) keeps its share only when
    the answer took it and the next token's alternatives say how much went on to the longer label; otherwise the
    whole share stays with the shorter label (the endpoint does not say more)."""
    entries = [e for e in content if isinstance(e, dict)]
    for n, entry in enumerate(entries):
        if not str(entry.get("token", "")).strip(MARKUP):
            continue
        probs = {tok: math.exp(lp) for tok, lp in _top_logprobs(entry).items()}
        mass = {name: sum(probs.get(f, 0.0) for f in forms) for name, forms in labels.items()}
        for short, forms in labels.items():
            longer = {name: [f[len(s):] for f in other for s in forms if f.startswith(s) and f != s]
                      for name, other in labels.items() if name != short}
            longer = {name: rest for name, rest in longer.items() if rest}
            if not longer or str(entry.get("token", "")) not in forms or n + 1 >= len(entries):
                continue
            after = {tok: math.exp(lp) for tok, lp in _top_logprobs(entries[n + 1]).items()}
            for name, rests in longer.items():
                go_on = math.fsum(after.get(r, 0.0) for r in set(rests))  # exact: the set's order moves no bit
                mass[name] += mass[short] * go_on
                mass[short] *= 1.0 - go_on
        total = sum(mass.values())
        return {name: m / total for name, m in mass.items()} if total > 0 else None
    return None


def endpoint_message(resp: httpx.Response) -> str:
    """The endpoint's own words: OpenAI's {error: {message}}, vLLM's {message}, Ollama's {error}, or page text."""
    try:
        body = resp.json()
    except ValueError:
        return " ".join(re.sub(r"<[^>]*>", " ", resp.text).split())[:200] or resp.reason_phrase
    if isinstance(body, dict):
        said = _body_error(body) or str(body.get("detail") or "")
        if said:
            return said[:500]
    return json.dumps(body)[:200]


def _error_code(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return ""
    err = body.get("error") if isinstance(body, dict) else None
    return str(err.get("code") or "") if isinstance(err, dict) else ""


def _wait_asked(resp: httpx.Response) -> float | None:
    """retry-after-ms (OpenAI's and Azure's finer header) before Retry-After."""
    ms = resp.headers.get("retry-after-ms")
    try:
        if ms is not None:
            return max(0.0, float(ms) / 1000)
    except ValueError:
        pass
    return retry_after_seconds(resp.headers.get("Retry-After"))


class ChatEndpoint:
    """One OpenAI-compatible chat endpoint: requests with retries, a budget, and the key kept out of every message;
    `complete` posts one body and reads its reply with the caller's reader."""

    def __init__(self, url: str, model: str, *, retry: Retry, api_key: SecretStr | None = None, pace: float = 0.0,
                 budget: int = 10_000, settings_prefix: str = "HINDSIGHT_VERIFIER",
                 url_setting: str = "HINDSIGHT_VERIFIER_URL", unit: str = "idea") -> None:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelUnavailable(f"{url_setting} must be an http(s) base URL such as "
                                      f"http://127.0.0.1:8000/v1, not {url!r}")
        self.model = model
        self.host = parts.hostname + (f":{parts.port}" if parts.port else "")
        self.key = endpoint_key(model, self.host)  # the model in cache keys
        self.where = f"POST {parts.scheme}://{self.host}{parts.path.rstrip('/')}/chat/completions"
        self.attempts, self.budget, self.max_wait = retry.attempts, budget, retry.max_wait
        self._prefix, self._unit = settings_prefix, unit
        self.requests = 0  # made by this object, retries included
        self._key = api_key if api_key is not None and api_key.get_secret_value() else None
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.get_secret_value()}"
        self._client = httpx.Client(base_url=url.strip().rstrip("/") + "/", timeout=retry.timeout, headers=headers)
        self._pacer = Pacer(pace)
        self._wait = backoff(retry.backoff_min, retry.backoff_max)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._client.close()

    def _redact(self, text: str) -> str:
        return text.replace(self._key.get_secret_value(), "***") if self._key is not None else text

    def _reserve(self, needed: int, *, what: str = "its candidates x 2 questions") -> None:
        """Refuse a unit of work the budget cannot cover, so no request is spent on answers that would not be
        stored."""
        with self._lock:
            if self.requests + needed <= self.budget:
                return
            if self.requests == 0:
                raise BudgetSpent(f"{self._prefix}_BUDGET={self.budget} is smaller than the {needed} requests "
                                  f"one {self._unit} needs ({what}); raise it and rerun")
            raise BudgetSpent(f"budget spent: {self.requests} of {self.budget} requests made "
                              f"({self._prefix}_BUDGET) and the next {self._unit} needs {needed}; the answers read "
                              "so far are cached; rerun to resume")

    def _spend(self) -> None:
        with self._lock:
            if self.requests >= self.budget:
                raise BudgetSpent(f"budget spent: all {self.budget} requests made ({self._prefix}_BUDGET; "
                                  f"retries count) in the middle of a {self._unit}; rerun to resume")
            self.requests += 1
        self._pacer.wait()

    def complete(self, body: dict, read: Callable[[object], T]) -> T:
        """POST one chat body and read its reply; transient faults (and Malformed from read) are retried."""

        def attempt() -> T:
            self._spend()
            resp = self._client.post("chat/completions", json=body)
            if resp.status_code >= 400:
                self._refuse(resp)
            try:
                data = json.loads(resp.content)
            except ValueError as exc:
                raise Malformed(f"{resp.status_code} with a broken JSON body ({len(resp.content)} bytes: {exc})") \
                    from None
            return read(data)

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.info("%s: %s; retrying in %.2f s", self.where, self._redact(reason(exc)), state.upcoming_sleep)

        retrying = Retrying(stop=stop_after_attempt(self.attempts), wait=self._wait, reraise=True,
                            retry=retry_if_exception_type(TRANSIENT), before_sleep=before_sleep)
        try:
            return retrying(attempt)
        except TRANSIENT as exc:
            raise EndpointFailed(f"{self.where}: no answer after {self.attempts} attempt(s) "
                                 f"({self._prefix}_ATTEMPTS); last error: {self._redact(reason(exc))}. "
                                 "The answers read so far are cached; rerun to resume") from None
        except httpx.HTTPError as exc:  # not transient: a bad URL, too many redirects
            raise EndpointRefused(f"{self.where}: {self._redact(reason(exc))}") from None

    def _refuse(self, resp: httpx.Response) -> None:
        """Raise Retryable (429, 5xx) or EndpointRefused (any other 4xx, a spent quota, too long a wait)."""
        status, said = resp.status_code, self._redact(endpoint_message(resp))
        if status == 429 and _error_code(resp) == "insufficient_quota":  # OpenAI: billing, not a rate
            raise EndpointRefused(f"{self.where}: the endpoint's quota is spent: {status} {said}")
        if status != 429 and status < 500:
            raise EndpointRefused(f"{self.where}: the endpoint refused the request: {status} {said}")
        wait = _wait_asked(resp)
        if wait is not None and wait > self.max_wait:
            raise EndpointRefused(f"{self.where}: {status}, and the endpoint asks to wait {wait:.0f} s, longer than "
                                  f"HINDSIGHT_VERIFIER_MAX_WAIT ({self.max_wait:.0f} s): {said}. The answers read "
                                  "so far are cached; rerun later to resume")
        raise Retryable(f"{status} {said}" + (f" (Retry-After {wait:g} s)" if wait is not None else ""),
                        retry_after=wait)


def required_endpoint(url: str | None, model: str | None, *, what: str, names: tuple[str, str],
                      also: str = "") -> tuple[str, str]:
    """(url, model), or ModelUnavailable naming the settings not set."""
    if url and model:
        return url, model
    missing = " and ".join(env for env, value in zip(names, (url, model)) if not value)
    raise ModelUnavailable(f"the openai {what} needs {names[0]} (the endpoint's base URL, e.g. "
                              f"http://127.0.0.1:8000/v1) and {names[1]} (the model name it serves){also}; "
                              f"not set: {missing}")


def endpoint_options(settings: Settings, *, api_key: SecretStr | None = None, budget: int | None = None) -> dict:
    """The retry, pacing and budget options of an endpoint, from the verifier's settings (the judge shares them)."""
    return {"api_key": api_key if api_key is not None else settings.llm.verifier_api_key,
            "retry": settings.llm.retry, "pace": settings.llm.verifier_pace,
            "budget": settings.llm.verifier_budget if budget is None else budget}
