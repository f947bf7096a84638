"""`hindsight fetch openalex|s2` and `hindsight refresh citations`."""

from datetime import date

import typer
from rich.table import Table
from sqlalchemy.exc import SQLAlchemyError

from indexing.errors import describe_error
from indexing.fetch import openalex, s2
from indexing.fetch.checkpoint import FetchBusy, all_states
from indexing.fetch.http import FetchError
from indexing.fetch.refresh import refresh_citations
from indexing.fetch.walk import Plan, dry_run, run
from indexing.settings import Settings
from indexing.windows import iso_day
from service.cli.common import JsonOpt, console, fail, print_json, progress_bars, ready_settings, say

app = typer.Typer(help="Fetch a corpus from OpenAlex or Semantic Scholar (resumable).", no_args_is_help=True)
refresh_app = typer.Typer(help="Refresh what ages: citation counts.", no_args_is_help=True)

FromOpt = typer.Option(None, "--from", help="Earliest publication date, YYYY-MM-DD (default: the cutoff).")
ToOpt = typer.Option(None, "--to", help="Latest publication date, YYYY-MM-DD (default: the window end).")
BaseUrlOpt = typer.Option(None, "--base-url", help="API base URL (a mirror, a proxy or a test server).")
DryRunOpt = typer.Option(False, "--dry-run", help="Print the request and the expected count; fetch nothing.")
RestartOpt = typer.Option(False, "--restart", help="Ignore the checkpoint and walk from the first page.")


def _date(value: str | None, option: str) -> date | None:
    if not value:
        return None
    try:
        return iso_day(value)
    except ValueError:
        fail(f"{option} {value!r} is not a date (want YYYY-MM-DD)")


def _retry_note(json_out: bool):
    def note(what: str, wait: float) -> None:
        if not json_out:
            say("retry", "yellow", f"in {wait:.1f}s: {what}")
    return note


def _walk(settings: Settings, plan: Plan, *, dry: bool, restart: bool, json_out: bool) -> None:
    try:
        if dry:
            out = dry_run(settings, plan)
            if json_out:
                print_json(out)
            else:
                console.print(f"request: {out['request']}\nexpected records: {out['expected_records']}, "
                              f"requests: {out['requests_needed']}, about {out['seconds_at_pace']} s at the "
                              f"configured pace; checkpoint: {out['checkpoint']}", highlight=False)
            return
        with progress_bars(not json_out) as bars:
            result = run(settings, plan, restart=restart, progress=bars, on_retry=_retry_note(json_out))
    except (FetchError, FetchBusy) as exc:
        fail(str(exc), 1)
    except (SQLAlchemyError, OSError) as exc:
        fail(f"fetch stopped ({describe_error(exc, settings.home)}); the failed page wrote nothing; run the same "
             "command again to resume", 1)
    out = result.as_dict()
    if json_out:
        print_json(out)
        return
    if result.already_done:
        console.print(f"this walk ({result.key}) is already complete: {out['records']} records in {out['pages']} "
                      "pages; --restart walks it again", highlight=False)
        return
    table = Table("field", "value", title=f"fetch {result.source} ({result.key})")
    for key in ("pages", "records", "total", "without_abstract", "requests", "cost_usd"):
        table.add_row(key, str(out[key]))
    for key, value in out["counts"].items():
        table.add_row(key, str(value))
    table.add_row("raw pages", out["raw_dir"])
    console.print(table)
    for error in out["errors"][-10:]:
        say("rejected", "yellow", str(error))
    if result.warning:
        say("warning:", "yellow", result.warning)


@app.command("openalex")
def fetch_openalex(
        from_date: str = FromOpt, to_date: str = ToOpt,
        search: str = typer.Option(None, help="Free-text search (billed at the search rate)."),
        topic: list[str] = typer.Option([], help="Topic id (T...), repeatable; OR-ed."),
        concept: list[str] = typer.Option([], help="Concept id (C...), repeatable; OR-ed."),
        source_id: list[str] = typer.Option([], "--source-id", help="Venue source id (S...), repeatable; OR-ed."),
        venue: list[str] = typer.Option([], help="Venue name, resolved to its best-matching source id; repeatable."),
        type: list[str] = typer.Option([], "--type", help="Work type (article, preprint, ...), repeatable; OR-ed."),
        filter: str = typer.Option(None, "--filter", help="Extra raw filter, e.g. 'language:en'."),
        base_url: str = BaseUrlOpt, dry_run_: bool = DryRunOpt, restart: bool = RestartOpt,
        json_out: bool = JsonOpt) -> None:
    """Walk OpenAlex works (cursor paging, 200 a page) into the store, one transaction per page."""
    settings = ready_settings()
    if not json_out and not openalex.secret_params(settings).get("api_key"):
        say("note:", "yellow", "HINDSIGHT_OPENALEX_API_KEY is not set; since 2026-02-13 OpenAlex needs a (free) key, "
            "and without one the daily allowance is about 100 list requests")
    ids = list(source_id)
    if venue:
        try:
            resolved = openalex.resolve_venues(settings, venue, base_url=base_url)
        except FetchError as exc:
            fail(str(exc), 1)
        if not json_out:
            for v in resolved:
                console.print(f"venue {v['name']!r} -> {v['id']} ({v['display_name']})", highlight=False)
        ids += [v["id"] for v in resolved]
    plan = openalex.plan(settings, from_date=_date(from_date, "--from"), to_date=_date(to_date, "--to"),
                         search=search, topics=topic, concepts=concept, source_ids=ids, types=type,
                         extra_filter=filter, base_url=base_url)
    _walk(settings, plan, dry=dry_run_, restart=restart, json_out=json_out)


@app.command("s2")
def fetch_s2(
        from_date: str = FromOpt, to_date: str = ToOpt,
        query: str = typer.Option(None, help="Bulk-search query (boolean syntax: +, |, -, quotes)."),
        venue: list[str] = typer.Option([], help="Venue name, repeatable (e.g. NeurIPS, ICML, ICLR)."),
        field_of_study: list[str] = typer.Option([], "--field-of-study", help="e.g. 'Computer Science'; repeatable."),
        publication_type: list[str] = typer.Option([], "--publication-type", help="e.g. Conference; repeatable."),
        sort: str = typer.Option(None, help="paperId|publicationDate|citationCount[:asc|desc]."),
        base_url: str = BaseUrlOpt, dry_run_: bool = DryRunOpt, restart: bool = RestartOpt,
        json_out: bool = JsonOpt) -> None:
    """Walk Semantic Scholar's /paper/search/bulk (token paging, 1000 a page) into the store."""
    settings = ready_settings()
    if not json_out and not s2.headers(settings):
        say("note:", "yellow", "HINDSIGHT_S2_API_KEY is not set: requests share Semantic Scholar's unauthenticated "
            "pool and will meet 429s")
    plan = s2.plan(settings, query=query, from_date=_date(from_date, "--from"), to_date=_date(to_date, "--to"),
                   venues=venue, fields_of_study=field_of_study, publication_types=publication_type, sort=sort,
                   base_url=base_url)
    _walk(settings, plan, dry=dry_run_, restart=restart, json_out=json_out)


@app.command("status")
def status(json_out: bool = JsonOpt) -> None:
    """The walks this HINDSIGHT_HOME has started: query, pages, records, counts, done or where it stopped."""
    settings = ready_settings()
    states = [s.as_dict() for s in all_states(settings.db_path)]
    if json_out:
        print_json({"walks": states})
        return
    table = Table("walk", "query", "pages", "records", "total", "inserted", "rejected", "done", title="fetch walks")
    for s in states:
        query = " ".join(f"{k}={v}" for k, v in s["query"].items() if k != "fields")
        table.add_row(s["key"], query, str(s["pages"]), str(s["records"]), str(s["total"]),
                      str(s["counts"]["inserted"]), str(s["counts"]["rejected"]), "yes" if s["done"] else "no")
    console.print(table)


@refresh_app.command("citations")
def citations(source: str = typer.Option("s2", help="openalex or s2."),
              cutoff: str = typer.Option(None, help="Window start (default: the cutoff)."),
              until: str = typer.Option(None, help="Window end (default: the window end)."),
              force: bool = typer.Option(False, help="Also refresh counts already taken today."),
              base_url: str = BaseUrlOpt, json_out: bool = JsonOpt) -> None:
    """Refresh the citation counts of the papers in the window; each row keeps the day its count was taken."""
    settings = ready_settings()
    if source not in ("openalex", "s2"):
        fail(f"--source {source!r}: use openalex or s2")
    try:
        with progress_bars(not json_out) as bars:
            out = refresh_citations(settings, source=source, base_url=base_url, cutoff=_date(cutoff, "--cutoff"),
                                    until=_date(until, "--until"), force=force, progress=bars,
                                    on_retry=_retry_note(json_out))
    except FetchError as exc:
        fail(f"{exc} (batches before this one are stored; rerun to continue: rows refreshed today are skipped)", 1)
    if json_out:
        print_json(out)
        return
    table = Table("field", "value", title=f"refresh citations from {source} ({out['citations_at']})")
    for key in ("papers", "requested", "refreshed", "changed", "unknown", "invalid", "unaddressable",
                "skipped_fresh", "requests", "raw_dir"):
        table.add_row(key, str(out[key]))
    console.print(table)
