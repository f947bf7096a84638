"""`hindsight ingest`."""

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from sqlalchemy.exc import SQLAlchemyError

from indexing.errors import describe_error
from indexing.ingest import IngestRejected, ingest_path
from service.cli.common import JsonOpt, console, fail, print_json, progress_bars, ready_settings, say

FORMAT_HELP = "auto, jsonl, csv, paperlists, openalex or s2"


def ingest(files: list[Path] = typer.Argument(..., exists=True, dir_okay=False, help="Paper files."),
           format: str = typer.Option("auto", "--format", help=FORMAT_HELP),
           skip_invalid: bool = typer.Option(False, "--skip-invalid",
                                             help="Write the valid rows and report the rejected ones."),
           json_out: bool = JsonOpt) -> None:
    """Validate and upsert paper files into the store, one transaction per file."""
    settings = ready_settings()
    reports: list[dict[str, Any]] = []
    rejected = False
    for path in files:
        with progress_bars(not json_out) as bars:
            try:
                report = ingest_path(path, db_path=settings.db_path, fmt=format, skip_invalid=skip_invalid,
                                     progress=bars)
            except IngestRejected as exc:
                rejected = True
                report = exc.report
                if not json_out:
                    say("rejected:", "bold red", str(exc))
            except (SQLAlchemyError, OSError) as exc:  # a full disk or a damaged database: its transaction rolled back
                done = f"; the {len(reports)} file(s) before it were written" if reports else ""
                fail(f"{path}: nothing written from this file ({describe_error(exc, settings.home)}){done}", 1)
        reports.append(report.as_dict())
        if not json_out and report.errors and skip_invalid:
            for e in report.errors:
                say("skipped", "yellow", str(e))
    if json_out:
        print_json({"files": reports})
    else:
        table = Table("file", "format", "read", "inserted", "updated", "unchanged", "duplicates", "rejected",
                      title="ingest")
        for r in reports:
            table.add_row(r["file"], r["format"], *(str(r[k]) for k in
                          ("read", "inserted", "updated", "unchanged", "duplicates", "rejected")))
        console.print(table)
    if rejected:
        raise typer.Exit(1)
