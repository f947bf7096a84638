"""Semantic Scholar Graph API: `/paper/search/bulk` token paging, `x-api-key`, 1 request/s."""

from collections.abc import Sequence
from datetime import date

import httpx

from indexing.fetch.http import FetchError, Verdict, error_text
from indexing.fetch.walk import Page, Plan
from indexing.settings import Settings

FIELDS = "paperId,title,abstract,year,publicationDate,venue,publicationVenue,citationCount,externalIds"
PAGE_SIZE = 1000  # the server's page; offset/limit are ignored by /search/bulk
BATCH_IDS = 500  # POST /paper/batch limit
NO_KEY_HINT = (" Semantic Scholar sends no Retry-After; without a key every client shares one throttled pool: "
               "set HINDSIGHT_S2_API_KEY (a key gets 1 request/s), or raise HINDSIGHT_S2_PACE.")


def headers(settings: Settings) -> dict:
    key = settings.fetch.s2_api_key.get_secret_value() if settings.fetch.s2_api_key is not None else ""
    return {"x-api-key": key} if key else {}


def classify(resp: httpx.Response) -> Verdict:
    """403 is a bad key here (not throttling); 429 carries no headers, so it is always backed off."""
    if resp.status_code == 403:
        return "reject", (f"403 {error_text(resp)}: the x-api-key was refused (wrong, or pruned after about 60 days "
                          "unused); check HINDSIGHT_S2_API_KEY")
    if resp.status_code == 429:
        return "retry", f"429 {error_text(resp)}"
    return None


def read_page(body) -> Page:
    """{total, token, data}; the last page has "token": null (key present), a no-hit page may lack data."""
    if not isinstance(body, dict):
        raise FetchError("Semantic Scholar answered 200 without a {total, token, data} page")
    data = body.get("data", [])
    if not isinstance(data, list):
        raise FetchError("Semantic Scholar page: 'data' is not a list")
    total = body.get("total")
    return Page(records=len(data), next_cursor=body.get("token") or None,
                total=total if isinstance(total, int) else None,
                without_abstract=sum(isinstance(p, dict) and not p.get("abstract") for p in data))


def plan(settings: Settings, *, query: str | None = None, from_date: date | None = None, to_date: date | None = None,
         venues: Sequence[str] = (), fields_of_study: Sequence[str] = (), publication_types: Sequence[str] = (),
         sort: str | None = None, base_url: str | None = None) -> Plan:
    """A bulk-search walk; dates default to the configured cutoff and window end."""
    params: dict = {"fields": FIELDS,
                    "publicationDateOrYear": f"{(from_date or settings.index.cutoff).isoformat()}:"
                                             f"{(to_date or settings.index.until).isoformat()}"}
    if query:
        params["query"] = query
    if venues:
        params["venue"] = ",".join(v.strip() for v in venues)
    if fields_of_study:
        params["fieldsOfStudy"] = ",".join(f.strip() for f in fields_of_study)
    if publication_types:
        params["publicationTypes"] = ",".join(t.strip() for t in publication_types)
    if sort:
        params["sort"] = sort
    return Plan(source="s2", fmt="s2", list_key="data", path="paper/search/bulk", params=params, page_size=PAGE_SIZE,
                pace=settings.fetch.s2_pace, base_url=base_url or settings.fetch.s2_url, read_page=read_page,
                first_cursor=None,
                cursor_param="token", headers=headers(settings), classify=classify, probe_params={"fields": "paperId"},
                total_is_estimate=True, hint="" if headers(settings) else NO_KEY_HINT)
