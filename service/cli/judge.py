"""`hindsight judge import`."""

from pathlib import Path

import typer
from rich.table import Table

from indexing.db import session_scope
from service.cli.common import JsonOpt, console, fail, print_json, ready_settings
from service.judges import JudgeImportRejected, import_judge_scores

app = typer.Typer(help="LLM-judge scores of stored ideas.", no_args_is_help=True)


@app.command("import")
def import_(file: Path = typer.Argument(..., exists=True, dir_okay=False, help="CSV (with a header) or JSONL."),
            format: str = typer.Option("auto", "--format", help="auto, csv or jsonl"),
            system: str = typer.Option(None, "--system", help="Resolve idea ids within this system."),
            run: str = typer.Option(None, "--run", help="Resolve idea ids within runs with this label."),
            json_out: bool = JsonOpt) -> None:
    """Import judge scores (idea_id, judge, any of novelty/feasibility/impact/overall); any bad row rejects the file."""
    if format not in ("auto", "csv", "jsonl"):
        fail(f"--format: expected auto, csv or jsonl, got {format!r}")
    settings = ready_settings()
    try:
        with session_scope(settings.db_path) as session:
            report = import_judge_scores(session, file.read_bytes(), name=str(file), fmt=format, system=system,
                                         run=run)
    except JudgeImportRejected as exc:
        if json_out:
            print_json(exc.report.as_dict())
        else:
            console.print(f"[bold red]rejected:[/] {exc}", highlight=False)
        raise typer.Exit(1) from None
    if json_out:
        print_json(report.as_dict())
        return
    table = Table("", "", title="judge scores imported", show_header=False)
    for key in ("file", "format", "rows", "inserted", "updated", "unchanged"):
        table.add_row(key, str(getattr(report, key)))
    table.add_row("judges", ", ".join(report.judges))
    table.add_row("dimensions", ", ".join(report.dimensions))
    console.print(table)
    if report.ignored_fields:
        console.print(f"[yellow]ignored fields:[/] {', '.join(report.ignored_fields)}", highlight=False)
