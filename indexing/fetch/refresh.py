"""Refresh the citation counts of the papers in the window, and note the day each count was taken.

OpenAlex: `filter=ids.openalex:W1|W2|...` (or `doi:` for papers from other sources), 100 ids a request.
Semantic Scholar: `POST /paper/batch` with 500 ids; the answer is in request order with null for an unknown id.
One transaction per batch; rows already refreshed today are skipped, so a stopped refresh resumes by rerunning.
"""

import re
from datetime import date
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from indexing.db import session_scope
from indexing.errors import describe_error
from indexing.fetch import openalex, raw, s2
from indexing.fetch.http import FetchError, Pacer, Retry, make_client, request_json
from indexing.fetch.walk import OnRetry, Progress, today
from indexing.models import Paper
from indexing.settings import Settings
from indexing.sources.errors import RowInvalid
from indexing.sources.records import count as valid_count

Target = tuple[int, str]  # (paper pk, the id the API is asked for)
_W_ID = re.compile(r"^W\d+$")


def _openalex_ids(row) -> tuple[str, str] | None:
    if _W_ID.match(row.paper_id):
        return "ids.openalex", row.paper_id
    if row.doi and not any(c in row.doi for c in ",|"):  # those would split the filter
        return "doi", row.doi
    return None


def _s2_id(row) -> str | None:
    if row.source == "s2":
        return row.paper_id
    if row.doi:
        return f"DOI:{row.doi}"
    if row.arxiv_id:
        return f"ARXIV:{row.arxiv_id}"
    return None


def _doi_key(value) -> str | None:
    return re.sub(r"^https?://(dx\.)?doi\.org/", "", value, flags=re.I).lower() if isinstance(value, str) else None


def refresh_citations(settings: Settings, *, source: str, base_url: str | None = None, cutoff: date | None = None,
                      until: date | None = None, force: bool = False, progress: Progress | None = None,
                      on_retry: OnRetry | None = None) -> dict:
    """Ask the source for the current count of every paper in the window it can address; returns the counts."""
    if source not in ("openalex", "s2"):
        raise ValueError(f"unknown source {source!r}; use openalex or s2")
    cutoff, until, taken = cutoff or settings.index.cutoff, until or settings.index.until, today()
    with session_scope(settings.db_path) as session:
        rows = session.execute(select(Paper.pk, Paper.paper_id, Paper.source, Paper.doi, Paper.arxiv_id,
                                      Paper.citations_at).where(Paper.publication_date >= cutoff,
                                                                Paper.publication_date <= until)
                               .order_by(Paper.pk)).all()
    out: dict[str, Any] = {"source": source, "window": {"start": cutoff.isoformat(), "end": until.isoformat()},
           "citations_at": taken.isoformat(), "papers": len(rows), "skipped_fresh": 0, "unaddressable": 0,
           "requested": 0, "refreshed": 0, "changed": 0, "unknown": 0, "invalid": 0, "requests": 0,
           "raw_dir": str(settings.raw_dir / source / f"refresh-{taken.isoformat()}")}
    fresh = [r for r in rows if not force and r.citations_at == taken]
    out["skipped_fresh"] = len(fresh)
    todo = [r for r in rows if force or r.citations_at != taken]
    if source == "openalex":
        groups: dict[str, list[Target]] = {}
        for r in todo:
            found = _openalex_ids(r)
            if found is None:
                out["unaddressable"] += 1
            else:
                groups.setdefault(found[0], []).append((r.pk, found[1]))
        batches = [(kind, ts[i:i + openalex.IDS_PER_FILTER]) for kind, ts in groups.items()
                   for i in range(0, len(ts), openalex.IDS_PER_FILTER)]
    else:
        targets = []
        for r in todo:
            ident = _s2_id(r)
            if ident is None:
                out["unaddressable"] += 1
            else:
                targets.append((r.pk, ident))
        batches = [("ids", targets[i:i + s2.BATCH_IDS]) for i in range(0, len(targets), s2.BATCH_IDS)]
    out["requested"] = sum(len(b) for _, b in batches)
    pace = settings.fetch.openalex_pace if source == "openalex" else settings.fetch.s2_pace
    retry, pacer = settings.fetch.retry, Pacer(pace)
    url = base_url or (settings.fetch.openalex_url if source == "openalex" else settings.fetch.s2_url)
    headers = s2.headers(settings) if source == "s2" else {}
    with make_client(settings, base_url=url, headers=headers) as client:
        for number, (kind, batch) in enumerate(batches, start=1):
            if source == "openalex":
                counts, body = _openalex_batch(client, settings, kind, batch, retry, pacer, on_retry)
            else:
                counts, body = _s2_batch(client, batch, retry, pacer, on_retry)
            out["requests"] += 1
            try:
                raw.save(settings.raw_dir, source, f"refresh-{taken.isoformat()}", f"batch-{number:06d}", body)
                _store(settings, batch, counts, taken, out)
            except (SQLAlchemyError, OSError) as exc:
                raise FetchError(f"refresh stopped at batch {number} ({describe_error(exc, settings.home)}); "
                                 "that batch wrote nothing") from exc
            if progress:
                progress("refresh", len(batch), out["requested"])
    return out


def _openalex_batch(client, settings: Settings, kind: str, batch: list[Target], retry: Retry, pacer: Pacer,
                    on_retry: OnRetry | None) -> tuple[list, bytes]:
    params = {"filter": f"{kind}:{'|'.join(ident for _, ident in batch)}", "per_page": openalex.PER_PAGE,
              "select": "id,doi,cited_by_count", **openalex.secret_params(settings)}
    body, data = request_json(client, "GET", "works", params=params, retry=retry, pacer=pacer,
                              classify=openalex.classify, on_retry=on_retry)
    openalex.read_page(body)  # checks the shape
    by_key = {}
    for work in body["results"]:
        if isinstance(work, dict):
            if isinstance(work.get("id"), str):
                by_key[openalex.short_id(work["id"])] = work.get("cited_by_count")
            doi = _doi_key(work.get("doi"))
            if doi:
                by_key[doi] = work.get("cited_by_count")
    return [by_key.get(ident if kind == "ids.openalex" else ident.lower()) for _, ident in batch], data


def _s2_batch(client, batch: list[Target], retry: Retry, pacer: Pacer,
              on_retry: OnRetry | None) -> tuple[list, bytes]:
    body, data = request_json(client, "POST", "paper/batch", params={"fields": "paperId,citationCount"},
                              json_body={"ids": [ident for _, ident in batch]}, retry=retry, pacer=pacer,
                              classify=s2.classify, on_retry=on_retry)
    if not isinstance(body, list) or len(body) != len(batch):
        got = f"{len(body)} items" if isinstance(body, list) else type(body).__name__
        raise FetchError(f"POST paper/batch: expected an array of {len(batch)} items in request order, got {got}")
    return [p.get("citationCount") if isinstance(p, dict) else None for p in body], data


def _store(settings: Settings, batch: list[Target], counts: list, taken: date, out: dict) -> None:
    """One transaction per batch; an unknown count never erases a known one."""
    with session_scope(settings.db_path) as session:
        for (pk, _), value in zip(batch, counts):
            try:
                value = valid_count(value, "citationCount")
            except RowInvalid:
                out["invalid"] += 1
                continue
            if value is None:
                out["unknown"] += 1
                continue
            paper = session.get(Paper, pk)
            if paper is None:
                continue
            out["changed"] += paper.citation_count != value
            paper.citation_count, paper.citations_at = value, taken
            out["refreshed"] += 1
