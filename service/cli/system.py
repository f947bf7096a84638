"""`hindsight system set|list`: idea generators and their declared knowledge cutoffs."""

import typer
from rich.table import Table

from indexing.db import session_scope
from service.cli.common import JsonOpt, console, fail, print_json, ready_settings
from service.systems import SystemInputError, list_systems, set_system

app = typer.Typer(help="Idea generators and their declared knowledge cutoffs.", no_args_is_help=True)


@app.command("set")
def set_(name: str = typer.Argument(..., help="The system name its runs are stored under."),
         knowledge_cutoff: str = typer.Option(..., "--knowledge-cutoff", help="YYYY-MM-DD: the newest literature "
                                                                             "the generator may know."),
         model: str = typer.Option(None, "--model", help="e.g. the LLM behind it."),
         json_out: bool = JsonOpt) -> None:
    """Declare a system's knowledge cutoff: its runs default to it; an earlier cutoff is flagged leak_risk."""
    settings = ready_settings()
    try:
        with session_scope(settings.db_path) as session:
            out = set_system(session, name=name, knowledge_cutoff=knowledge_cutoff, model=model)
    except SystemInputError as exc:
        fail(f"--{exc.field.replace('_', '-')}: {exc}")
    if json_out:
        print_json(out)
        return
    console.print(f"system {out['name']}: knowledge cutoff {out['knowledge_cutoff']}"
                  + (f", model {out['model']}" if out["model"] else ""), highlight=False)


@app.command("list")
def list_(json_out: bool = JsonOpt) -> None:
    """The declared systems."""
    settings = ready_settings()
    with session_scope(settings.db_path) as session:
        out = list_systems(session)
    if json_out:
        print_json(out)
        return
    t = Table("system", "knowledge cutoff", "model", title="declared systems")
    for s in out:
        t.add_row(s["name"], s["knowledge_cutoff"], s["model"] or "–")
    console.print(t)
