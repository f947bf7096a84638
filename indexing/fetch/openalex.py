"""OpenAlex works: cursor paging (`cursor=*`, then `meta.next_cursor`), filters, key, budget headers."""

from collections.abc import Sequence
from datetime import date

import httpx

from indexing.fetch.http import FetchError, Pacer, Verdict, error_text, make_client, request_json
from indexing.fetch.walk import Page, Plan
from indexing.settings import Settings

PER_PAGE = 200  # the documented maximum; still honoured in March 2026
IDS_PER_FILTER = 100  # values OR-ed in one filter


def short_id(value: str) -> str:
    """'https://openalex.org/S123' -> 'S123'."""
    return value.strip().rstrip("/").rsplit("/", 1)[-1]


def secret_params(settings: Settings) -> dict:
    out = {}
    if settings.fetch.openalex_api_key is not None and settings.fetch.openalex_api_key.get_secret_value():
        out["api_key"] = settings.fetch.openalex_api_key.get_secret_value()
    if settings.fetch.contact_email:
        out["mailto"] = settings.fetch.contact_email
    return out


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def classify(resp: httpx.Response) -> Verdict:
    """Daily budget spent (stop) versus per-second throttling (back off), from the X-RateLimit-* headers."""
    status, h, text = resp.status_code, resp.headers, error_text(resp)
    if status == 401:
        return "reject", (f"401 {text}: set HINDSIGHT_OPENALEX_API_KEY (OpenAlex requires a key since "
                          "2026-02-13; keys are free)")
    if status not in (403, 429):
        return None
    remaining, required = _number(h.get("x-ratelimit-remaining")), _number(h.get("x-ratelimit-credits-required"))
    usd_left, usd_needed = _number(h.get("x-ratelimit-remaining-usd")), _number(h.get("x-ratelimit-cost-required-usd"))
    reset = _number(h.get("x-ratelimit-reset"))
    resets = "it resets at midnight UTC" + (f" (in {reset:.0f} s, X-RateLimit-Reset)" if reset else "")
    if remaining is not None and required is not None and remaining < required:
        return "exhausted", (f"{status} {text}: the daily budget is exhausted (X-RateLimit-Remaining {remaining:g} < "
                             f"X-RateLimit-Credits-Required {required:g}); {resets}")
    if usd_left is not None and usd_needed is not None and usd_left < usd_needed:
        return "exhausted", (f"{status} {text}: the daily budget is exhausted (X-RateLimit-Remaining-USD {usd_left:g} "
                             f"< X-RateLimit-Cost-Required-USD {usd_needed:g}); {resets}")
    if status == 429 and remaining is not None and remaining <= 0:
        return "exhausted", f"429 {text}: the daily budget is exhausted (X-RateLimit-Remaining 0); {resets}"
    if "daily" in text.lower():
        return "exhausted", f"{status} {text}: the daily limit is exceeded; {resets}"
    if status == 403 and "rate limit" not in text.lower():
        return "reject", f"403 {text}"
    return "retry", f"{status} {text} (throttled)"


def read_page(body) -> Page:
    if not (isinstance(body, dict) and isinstance(body.get("meta"), dict) and isinstance(body.get("results"), list)):
        raise FetchError("OpenAlex answered 200 without a {meta, results} list page")
    meta = body["meta"]
    count, cost = meta.get("count"), meta.get("cost_usd")
    return Page(records=len(body["results"]), next_cursor=meta.get("next_cursor") or None,
                total=count if isinstance(count, int) else None,
                without_abstract=sum(isinstance(w, dict) and not w.get("abstract_inverted_index")
                                     for w in body["results"]),
                cost_usd=float(cost) if isinstance(cost, (int, float)) else 0.0)


def _any_of(values) -> str:
    return "|".join(short_id(v) if "openalex.org/" in v else v.strip() for v in values)


def plan(settings: Settings, *, from_date: date | None = None, to_date: date | None = None, search: str | None = None,
         topics: Sequence[str] = (), concepts: Sequence[str] = (), source_ids: Sequence[str] = (),
         types: Sequence[str] = (),
         extra_filter: str | None = None, base_url: str | None = None) -> Plan:
    """A works walk; dates default to the configured cutoff and window end."""
    parts = [f"from_publication_date:{(from_date or settings.index.cutoff).isoformat()}",
             f"to_publication_date:{(to_date or settings.index.until).isoformat()}"]
    for name, values in (("topics.id", topics), ("concepts.id", concepts),
                         ("primary_location.source.id", source_ids), ("type", types)):
        if values:
            parts.append(f"{name}:{_any_of(values)}")
    if extra_filter:
        parts.append(extra_filter)
    params = {"filter": ",".join(parts), "per_page": PER_PAGE}
    if search:
        params["search"] = search
    return Plan(source="openalex", fmt="openalex", list_key="results", path="works", params=params, page_size=PER_PAGE,
                pace=settings.fetch.openalex_pace, base_url=base_url or settings.fetch.openalex_url,
                read_page=read_page,
                first_cursor="*", cursor_param="cursor", secret_params=secret_params(settings), classify=classify,
                probe_params={"per_page": 1})


def resolve_venues(settings: Settings, names: list[str], *, base_url: str | None = None) -> list[dict]:
    """Venue names to source ids: the best match of `GET /sources?search=NAME` for each name."""
    retry, pacer = settings.fetch.retry, Pacer(settings.fetch.openalex_pace)
    found = []
    with make_client(settings, base_url=base_url or settings.fetch.openalex_url) as client:
        for name in names:
            body, _ = request_json(client, "GET", "sources", retry=retry, pacer=pacer, classify=classify,
                                   params={"search": name, "per_page": 1, **secret_params(settings)})
            results = body.get("results") if isinstance(body, dict) else None
            if not results:
                raise FetchError(f"no OpenAlex source matches the venue {name!r}; pass its id with --source-id")
            found.append({"name": name, "id": short_id(results[0]["id"]),
                          "display_name": results[0].get("display_name")})
    return found
