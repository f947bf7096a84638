"""`hindsight report`."""

from pathlib import Path

import typer

from indexing.db import session_scope
from service.analyses import AnalysisError
from service.cli.analyze import OPTIONS
from service.cli.common import JsonOpt, console, fail, print_json, ready_settings


def report(run: list[str] = typer.Option(None, "--run", help="Run id or label to report (repeatable); all runs when "
                                                             "absent."),
           out: Path = typer.Option(..., "--out", dir_okay=False, help="report.html (one self-contained file) or "
                                                                       "report.md (its plots as SVG files beside it)."),
           judge: str = typer.Option(None, "--judge", help="The judge of the quadrants and correlations (needed when "
                                                           "several scored the ideas)."),
           labels: bool = typer.Option(False, "--labels", help="Add the estimates from labels (matcher, labels alone, "
                                                               "PPI++) and the matcher's agreement."),
           by: str = typer.Option(None, "--by", help="Group per system, run or window (default: system; scores "
                                                     "of several windows, unpooled, are grouped per window)."),
           level: str = typer.Option("realised", "--level", help="Decision level: realised or direction."),
           cutoff: str = typer.Option(None, "--cutoff", help="Only scores whose window starts on this date."),
           until: str = typer.Option(None, "--until", help="Only scores whose window ends on this date."),
           pool_windows: bool = typer.Option(False, "--pool-windows", help="Pool scores made in different windows."),
           dimension: str = typer.Option("overall", "--dimension", help="The judge dimension of the quadrants."),
           json_out: bool = JsonOpt) -> None:
    """Write the evaluation of runs as one file to share: provenance, systems with intervals and their comparison,
    prior-art classes, quadrants and correlations against the judge, score distributions, estimates from labels.

    The figures are those `hindsight analyze ... --json` gives for the same selection; the HTML file needs no network
    to open (inline CSS and SVG)."""
    from service.report.files import SUFFIXES, write_report
    from service.report.gather import ReportRequest, gather

    if out.suffix.lower() not in SUFFIXES:
        fail(f"--out: {out} must end in .html or .md")
    settings = ready_settings()
    request = ReportRequest(runs=tuple(run or ()), judge=judge, labels=labels, group_by=by, cutoff=cutoff,
                            until=until, pool_windows=pool_windows, level=level, dimension=dimension)
    try:
        with session_scope(settings.db_path) as session:
            gathered = gather(session, settings, request)
    except AnalysisError as exc:
        fail(f"{OPTIONS.get(exc.field, '--' + exc.field)}: {exc.message}")
    written = write_report(gathered, out)
    if json_out:
        print_json({"files": [str(p) for p in written], "selection": gathered.selection.as_dict(),
                    "empty_sections": gathered.why, "notes": gathered.notes})
        return
    for note in gathered.notes:
        console.print(note, highlight=False)
    for key, why in gathered.why.items():
        console.print(f"{key}: {why}", highlight=False)
    console.print(f"wrote {', '.join(str(p) for p in written)}", highlight=False)
