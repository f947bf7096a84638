"""Walk an API's pages to the end: one request, one raw file, one ingest transaction (with its checkpoint) per page."""

import copy
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from datetime import date, datetime, timezone
from urllib.parse import urljoin

import httpx
from sqlalchemy.exc import SQLAlchemyError

from indexing.errors import describe_error
from indexing.fetch import checkpoint, raw
from indexing.fetch.checkpoint import State
from indexing.fetch.http import Classifier, FetchError, Pacer, Retry, describe, make_client, request_json
from indexing.ingest import IngestReport, ingest_bytes
from indexing.settings import Settings

Progress = Callable[[str, int, int], None]
OnRetry = Callable[[str, float], None]


@dataclass
class Page:
    records: int  # items in the page's list
    next_cursor: str | None
    total: int | None
    without_abstract: int = 0  # records served with no abstract (kept with their title alone)
    cost_usd: float = 0.0  # what the API says the request cost (OpenAlex meta.cost_usd, 2026)


@dataclass
class Plan:
    """The source-specific parts of a walk (built by openalex.plan / s2.plan)."""

    source: str
    fmt: str  # the ingest format of a page
    path: str
    list_key: str  # where a page keeps its records: results (OpenAlex), data (Semantic Scholar)
    params: dict  # the query as sent, cursor excluded
    page_size: int
    pace: float
    base_url: str
    read_page: Callable[[object], Page]
    first_cursor: str | None = None  # OpenAlex starts with '*', Semantic Scholar with no token
    cursor_param: str = "cursor"
    secret_params: dict = field(default_factory=dict)  # sent, but not part of the walk's identity
    headers: dict = field(default_factory=dict)
    classify: Classifier | None = None
    probe_params: dict = field(default_factory=dict)  # a cheap first request for --dry-run
    total_is_estimate: bool = False
    hint: str = ""  # added to a give-up message

    @property
    def key(self) -> str:
        return checkpoint.walk_key(self.source, self.params)


@dataclass
class FetchResult:
    key: str
    source: str
    state: dict
    requests: int = 0
    already_done: bool = False
    warning: str | None = None
    raw_dir: str = ""

    def as_dict(self) -> dict:
        return {"key": self.key, "source": self.source, "requests": self.requests, "already_done": self.already_done,
                "warning": self.warning, "raw_dir": self.raw_dir, **self.state}


def today() -> date:
    return datetime.now(timezone.utc).date()


def run(settings: Settings, plan: Plan, *, restart: bool = False, progress: Progress | None = None,
        on_retry: OnRetry | None = None) -> FetchResult:
    """Walk from the checkpoint (or the start) to the end; raises FetchError subclasses when it has to stop."""
    key = plan.key
    with checkpoint.walk_lock(settings.home, key):
        state = None if restart else checkpoint.load(settings.db_path, key)
        if state is not None and state.done:
            return FetchResult(key, plan.source, state.as_dict(), already_done=True,
                               raw_dir=str(settings.raw_dir / plan.source / key))
        raw.clear_debris(settings.raw_dir, plan.source, key)
        state = state or State(key=key, source=plan.source, query=plan.params,
                               started=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        retry, pacer = settings.fetch.retry, Pacer(plan.pace)
        result = FetchResult(key, plan.source, {}, raw_dir=str(settings.raw_dir / plan.source / key))
        if progress and state.total:
            progress("fetch", state.records, state.total)
        with make_client(settings, base_url=plan.base_url, headers=plan.headers) as client:
            while not state.done:
                try:
                    state = _one_page(settings, plan, client, state, retry, pacer, progress, on_retry)
                except (SQLAlchemyError, OSError) as exc:  # a full disk, a locked or damaged database
                    raise FetchError(f"fetch stopped ({describe_error(exc, settings.home)}); the failed page wrote "
                                     "nothing; run the same command again to resume") from exc
                result.requests += 1
        result.state = state.as_dict()
        if state.total is not None and state.records != state.total:
            note = ("the API's total is an estimate, and a walk cut short by the rate budget also ends with a null "
                    "token: compare with the API later (--restart walks again)") if plan.total_is_estimate else \
                   "the corpus changed while it was walked, or pages were cut: --restart walks it again"
            result.warning = f"the walk returned {state.records} records, the API announced {state.total}; {note}"
        return result


def _one_page(settings: Settings, plan: Plan, client: httpx.Client, state: State, retry: Retry, pacer: Pacer,
              progress: Progress | None, on_retry: OnRetry | None) -> State:
    cursor = state.cursor if state.pages else plan.first_cursor
    params = {**plan.params, **({plan.cursor_param: cursor} if cursor else {}), **plan.secret_params}
    body_obj, body = request_json(client, "GET", plan.path, params=params, retry=retry, pacer=pacer,
                                  classify=plan.classify, on_retry=on_retry, hint=plan.hint)
    page = plan.read_page(body_obj)
    nxt = copy.deepcopy(state)
    nxt.cost_usd = round(nxt.cost_usd + page.cost_usd, 6)
    if page.total is not None and page.records:  # an end page may describe something else (recorded: count 2)
        nxt.total = page.total
    if page.records == 0:  # the documented end (OpenAlex: results [] with next_cursor null), or a guard
        nxt.done, nxt.cursor = True, None
        checkpoint.save_now(settings.db_path, nxt)
        return nxt
    nxt.pages += 1
    nxt.records += page.records
    nxt.without_abstract += page.without_abstract
    nxt.cursor, nxt.done = page.next_cursor or None, not page.next_cursor
    path = raw.save(settings.raw_dir, plan.source, state.key, f"page-{nxt.pages:06d}", body)
    name = str(path.relative_to(settings.home))

    def within(session, report: IngestReport) -> None:
        if report.read != page.records:  # every record the API sent is either stored or counted as rejected
            raise FetchError(f"{name}: ingest read {report.read} of the page's {page.records} records: "
                             f"{'; '.join(map(str, report.errors[:3]))}")
        for k in checkpoint.COUNTS:
            nxt.counts[k] += getattr(report, k)
        nxt.errors.extend(str(e) for e in report.errors)
        checkpoint.save(session, nxt)

    # the page's records as JSONL, one per line: independent of the API's key order and layout, and an error's
    # line is the record's position in the served list (ASCII escapes: no U+2028 can split a line)
    records = "\n".join(json.dumps(item) for item in body_obj[plan.list_key]).encode()
    ingest_bytes(records, name, db_path=settings.db_path, fmt=plan.fmt, skip_invalid=True, citations_at=today(),
                 within=within)
    if progress:
        progress("fetch", page.records, nxt.total or 0)
    return nxt


def dry_run(settings: Settings, plan: Plan) -> dict:
    """The request a walk sends, and what the API says it holds (one cheap request)."""
    retry, pacer = settings.fetch.retry, Pacer(plan.pace)
    first = {**plan.params, **({plan.cursor_param: plan.first_cursor} if plan.first_cursor else {})}
    out: dict[str, Any] = {"source": plan.source, "key": plan.key,
           "request": describe("GET", urljoin(plan.base_url.rstrip("/") + "/", plan.path), first | plan.secret_params),
           "expected_records": None, "requests_needed": None, "seconds_at_pace": None}
    with make_client(settings, base_url=plan.base_url, headers=plan.headers) as client:
        probe = {**plan.params, **plan.probe_params, **plan.secret_params}
        body_obj, _ = request_json(client, "GET", plan.path, params=probe, retry=retry, pacer=pacer,
                                   classify=plan.classify, hint=plan.hint)
    total = plan.read_page(body_obj).total
    if total is not None:
        pages = math.ceil(total / plan.page_size) + (1 if plan.first_cursor else 0)  # OpenAlex ends on an empty page
        out |= {"expected_records": total, "requests_needed": pages, "seconds_at_pace": round(pages * plan.pace, 1)}
    existing = checkpoint.load(settings.db_path, plan.key)
    out["checkpoint"] = None if existing is None else {"pages": existing.pages, "records": existing.records,
                                                       "done": existing.done}
    return out
