"""`hindsight label draw|import|export|status|suggest`."""

from pathlib import Path
from typing import NoReturn

import typer
from rich.table import Table

from indexing.db import session_scope
from service.cli.common import JsonOpt, console, fail, print_json, progress_bars, ready_settings, stage_bar
from service.labels.draws import LabelError, draw as draw_ideas, status as draw_status
from service.labels import sheets
from service.labels.store import FORMATS, ImportRejected, export_labels, import_labels

app = typer.Typer(help="Label a random draw of a run's ideas; import and export labels.", no_args_is_help=True)
RunOpt = typer.Option(..., "--run", help="Run id or label (a label names every system's run with it).")
SystemOpt = typer.Option(None, "--system", help="Only this system's run.")


# the fields a LabelError names that are this command line's options
OPTIONS = {"run", "system", "n", "seed", "draw", "candidates", "annotator"}


def _fail(exc: LabelError) -> NoReturn:
    """The error naming the option at fault (the field over HTTP)."""
    fail(f"--{exc.field}: {exc.message}" if exc.field in OPTIONS else str(exc))


@app.command()
def draw(run: str = RunOpt, n: int = typer.Option(..., "--n", min=1, help="Ideas to draw from each system's run."),
         seed: int | None = typer.Option(None, "--seed", min=0, max=2**32 - 1,
                                         help="Random seed (a random one, stored, when absent)."),
         system: str | None = SystemOpt, json_out: bool = JsonOpt) -> None:
    """Draw N ideas at random from each system's scored ideas not drawn yet, and store the draw."""
    settings = ready_settings()
    try:
        with session_scope(settings.db_path) as session:
            answer = draw_ideas(session, run=run, n=n, seed=seed, system=system)
    except LabelError as exc:
        _fail(exc)
    if json_out:
        print_json(answer)
        return
    for d in answer["draws"]:
        console.print(f"draw {d['draw']}: {d['n']} of {d['available']} undrawn ideas of {d['system']}/{d['run']} "
                      f"(run {d['run_id']}, {d['population']} scored), seed {d['seed']}", highlight=False)


@app.command("import")
def import_(file: Path = typer.Argument(..., exists=True, dir_okay=False, readable=True),
            run: str | None = typer.Option(None, "--run", help="Run for rows that name none (needed for the judged "
                                                                 "format)."),
            system: str | None = SystemOpt,
            annotator: str | None = typer.Option(None, "--annotator", help="Annotator for rows that name none."),
            fmt: str = typer.Option("auto", "--format", help=f"{' | '.join(FORMATS)}: labels rows "
                                                            "{run, idea_id, paper_id, label, annotator}, the "
                                                            "judged format (idea, reviewed, same_problem, "
                                                            "same_problem_and_approach) or a draw's sheet "
                                                            "(label export --draw; JSONL or CSV)."),
            json_out: bool = JsonOpt) -> None:
    """Import labels: the whole file is checked first; any bad row rejects it and nothing is written."""
    settings = ready_settings()
    try:
        with session_scope(settings.db_path) as session:
            report = import_labels(session, file.read_bytes(), name=str(file), fmt=fmt, run=run, system=system,
                                   annotator=annotator)
    except ImportRejected as exc:
        if json_out:
            print_json(exc.report.as_dict())
        fail(str(exc))
    if json_out:
        print_json(report.as_dict())
        return
    console.print(f"{file}: {report.labels} labels of {report.ideas} ideas by "
                  f"{', '.join(report.annotators) or 'nobody'} ({report.inserted} new, {report.updated} changed, "
                  f"{report.unchanged} unchanged); {report.ideas_outside_draws} of the ideas are in no draw (kept, "
                  "not in estimates)" + (f"; {report.blank} rows left blank (skipped)" if report.blank else ""),
                  highlight=False)


@app.command()
def export(run: str | None = typer.Option(None, "--run", help="The run's labels (id or label: every system's run "
                                                                "with it)."),
           system: str | None = SystemOpt,
           draws: list[int] = typer.Option(None, "--draw", min=1, help="Instead of --run: a sheet of this draw "
                                                                       "(repeatable) to label elsewhere."),
           candidates: int | None = typer.Option(None, "--candidates", min=1, max=50,
                                                 help="With --draw: candidates per idea (default: the labelling "
                                                      "view's, HINDSIGHT_LABELS_TOP_K)."),
           fmt: str = typer.Option("jsonl", "--format", help="With --draw: jsonl or csv (for a spreadsheet)."),
           out: Path | None = typer.Option(None, "--out", dir_okay=False,
                                           help="Write here instead of stdout.")) -> None:
    """Write the run's labels as the JSONL that `hindsight label import` reads, or (--draw) a draw's sheet: one
    row per drawn idea and candidate with their texts and a blank label to fill, that import reads back."""
    if (run is None) == (not draws):
        fail("give --run (its labels) or --draw (a sheet to label)")
    if not draws and (candidates is not None or fmt != "jsonl"):
        fail("--candidates and --format are for a sheet: give --draw")
    if fmt not in sheets.FORMATS:
        fail(f"--format: expected {' or '.join(sheets.FORMATS)}, got {fmt!r}")
    settings = ready_settings()
    try:
        with session_scope(settings.db_path) as session:
            if draws:
                rows = sheets.sheet_rows(session, draws=draws, candidates=candidates or settings.labels.labels_top_k)
            else:
                assert run is not None
                rows = export_labels(session, run=run, system=system)
    except LabelError as exc:
        _fail(exc)
    text = sheets.to_csv(rows) if fmt == "csv" else sheets.to_jsonl(rows)
    what = f"{len(rows)} rows ({len({(r['draw'], r['idea_id']) for r in rows})} ideas) to label" if draws \
        else f"{len(rows)} labels"
    if out:
        out.write_text(text, encoding="utf-8", newline="")
        console.print(f"wrote {what} to {out}", highlight=False)
    else:
        typer.echo(text, nl=False)


@app.command()
def status(run: str = RunOpt, system: str | None = SystemOpt, json_out: bool = JsonOpt) -> None:
    """Per draw: ideas labelled of drawn, per annotator; labels of ideas outside any draw."""
    settings = ready_settings()
    try:
        with session_scope(settings.db_path) as session:
            answer = draw_status(session, run=run, system=system)
    except LabelError as exc:
        _fail(exc)
    if json_out:
        print_json(answer)
        return
    t = Table("system/run", "draw", "seed", "drawn", "labelled (per annotator)", title=f"labels of run {run}")
    for s in answer["strata"]:
        for d in s["draws"]:
            done = ", ".join(f"{a}: {n} of {d['n']}" for a, n in d["labelled"].items()) or "none yet"
            t.add_row(f"{s['system']}/{s['run']}", str(d["draw"]), str(d["seed"]), f"{d['n']} of {s['scored']}", done)
        if not s["draws"]:
            t.add_row(f"{s['system']}/{s['run']}", "–", "–", f"0 of {s['scored']}", "no draw yet")
    console.print(t)
    for s in answer["strata"]:
        for a, v in s["outside_draws"].items():
            console.print(f"{s['system']}/{s['run']}: {a} labelled {v['ideas']} ideas outside any draw "
                          f"({v['labels']} labels): kept, not used in estimates", highlight=False)


@app.command()
def suggest(draws: list[int] = typer.Option(..., "--draw", min=1, help="The draw to label (repeatable)."),
            backend: str = typer.Option("local", "--backend", help="local (the packaged model) or openai (the judge's "
                                                                   "endpoint: HINDSIGHT_JUDGE_URL, _MODEL)."),
            annotator: str | None = typer.Option(None, "--annotator", help="The model's annotator name (default "
                                                                           "MODEL@label-v1); never a person's."),
            candidates: int | None = typer.Option(None, "--candidates", min=1, max=50,
                                                  help="Candidates per idea (default: the labelling view's)."),
            json_out: bool = JsonOpt) -> None:
    """Ask a model the labelling question for each candidate of the draws (answers cached: a rerun asks nothing
    twice) and store its answers as the model's annotator; print its agreement (Cohen's kappa) with the others."""
    from service.cli.label_tables import kappa_line
    from service.cli.judge import backend_judge, check_backend
    from service.labels.suggest import suggest as suggest_labels

    check_backend(backend)
    if annotator is not None and not annotator.strip():
        fail("--annotator: give a name")
    settings = ready_settings()
    judge = backend_judge(backend)
    with progress_bars(not json_out) as bars:
        try:
            report = suggest_labels(settings.db_path, draws=draws, judge=judge, annotator=annotator,
                                    candidates=candidates or settings.labels.labels_top_k,
                                    progress=stage_bar(bars, "label"))
        except LabelError as exc:
            _fail(exc)
    if json_out:
        print_json(report.as_dict())
    else:
        counts = ", ".join(f"{k} {v}" for k, v in report.labels.items())
        console.print(f"{report.annotator}: {report.labelled} of {report.rows} candidates labelled ({counts}) on "
                      f"{report.ideas} ideas; {report.invalid} answers unreadable (left unlabelled); "
                      f"{report.new_calls} new calls, {report.cached} from the cache", highlight=False)
        for k in report.agreement:
            console.print(kappa_line(k), highlight=False)
    if report.stopped:
        fail(f"stopped with {report.left} candidates left: {report.stopped}; rerun to resume", 3)
