"""`hindsight metrics ...`: score neighbouring benchmarks from gold and prediction files."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from service.cli.common import fail
from service.metrics import TASKS, MetricsInputError, Report, get_task, run_task
from service.metrics.parsing import InputFileError, read_records
from service.metrics.report import Compat, with_compat

app = typer.Typer(help="Metrics of neighbouring benchmarks (InnoEval, SIQA, ReviewMT, novelty audit).",
                  no_args_is_help=True, pretty_exceptions_enable=False)


def _where(error: MetricsInputError, places: dict[str, list[str]], files: dict[str, list[Path]]) -> str:
    """The error's item as a file position when it came from a file, else its files or its input name."""
    located = places.get(error.source or "")
    if located is not None and error.index is not None and error.index < len(located):
        prefix = located[error.index]
    elif files.get(error.source or ""):
        prefix = ", ".join(map(str, files[error.source or ""]))
    else:
        prefix = error.source or "input"
    field = f", field '{error.field}'" if error.field else ""
    return f"{prefix}{field}: {error.message}"


def _format(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _metrics_table(metrics: dict[str, float | None], chance: dict[str, float]) -> Table:
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    if chance:
        table.add_column("chance", justify="right")
    for name, value in metrics.items():
        table.add_row(name, _format(value), *([_format(chance.get(name))] if chance else []))
    return table


def _counts_table(counts: dict[str, int]) -> Table:
    table = Table()
    table.add_column("count")
    table.add_column("value", justify="right")
    for name, value in counts.items():
        table.add_row(name, str(value))
    return table


def print_report(report: Report) -> None:
    """Both blocks, the one `--compat` names first: strict (recommended) and the benchmark's reference rule."""
    console = Console(markup=False)  # the notes and sources quote file names and input
    strict = [Text.assemble(("strict", "bold"), f" (recommended): {report.benchmark} / {report.task}, n = "
                            f"{report.strict.n}; every gold item in the denominator, failures counted wrong"),
              _metrics_table(report.strict.metrics, report.chance), "strict accounting",
              _counts_table(report.counts)]
    reference = [Text.assemble(("reference", "bold"), f": {report.reference.source}, n = {report.reference.n}"),
                 _metrics_table(report.reference.metrics, {}),
                 "reference accounting (the counts behind the gap to strict)", _counts_table(report.reference.counts),
                 f"reference rule: {report.reference.rule}"]
    for part in (reference + strict if report.compat == "reference" else strict + reference):
        if isinstance(part, str | Text):
            console.print(part, highlight=False, soft_wrap=True)
        else:
            console.print(part)
    for note in report.notes:
        console.print(f"note: {note}", highlight=False)
    console.print("How each metric and count was computed: run with --json (`counting`).", highlight=False)


def run(benchmark: str, task: str, *, gold: list[Path], pred: Path, pred_after: Path | None = None,
        as_json: bool = False, seed: int = 0, n_boot: int = 2000, compat: Compat = "strict") -> None:
    """Load the files, score, print; any input problem ends with exit code 2 and a message naming where."""
    spec = get_task(benchmark, task)
    if spec is None:
        known = ", ".join(t for b, t in TASKS if b == benchmark)
        fail(f"unknown task {task!r} for {benchmark} (choose from: {known})")
    if spec.two_runs and pred_after is None:
        fail(f"{benchmark} {task} compares two runs: give --pred-after FILE")
    places: dict[str, list[str]] = {}
    try:
        gold_items: list[Any] = []
        places["gold"] = []
        for path in gold:
            items, where = read_records(path)
            gold_items += items
            places["gold"] += where
        predictions, places["predictions"] = read_records(pred)
        after = None
        if spec.two_runs and pred_after is not None:
            after, places["predictions_after"] = read_records(pred_after)
    except InputFileError as error:
        fail(str(error))
    files = {"gold": gold, "predictions": [pred], "predictions_after": [pred_after] if pred_after else []}
    for name, paths in files.items():
        if name in places and not places[name]:
            fail(f"{', '.join(map(str, paths))}: no records (empty file)")
    try:
        report = run_task(spec, gold=gold_items, predictions=predictions, predictions_after=after, seed=seed,
                          n_boot=n_boot)
    except MetricsInputError as error:
        fail(_where(error, places, files))
    report = with_compat(report, compat)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        print_report(report)


GoldOpt = Annotated[list[Path], typer.Option("--gold", help="Gold file (JSON array, JSONL or CSV); repeat to join "
                                                            "files.")]
PredOpt = Annotated[Path, typer.Option("--pred", help="Predictions file (JSONL, JSON array or CSV).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the JSON report instead of tables.")]


class CompatChoice(str, Enum):
    strict = "strict"
    reference = "reference"


CompatOpt = Annotated[CompatChoice, typer.Option(
    "--compat", help="strict (default, recommended): every gold item counted, failures wrong; reference: the "
                     "benchmark's own code's number first, to reproduce a leaderboard. Both are always reported.")]


@app.command()
def innoeval(task: Annotated[str, typer.Option(help="points | groups | pairs")], gold: GoldOpt, pred: PredOpt,
             as_json: JsonOpt = False, compat: CompatOpt = CompatChoice.strict) -> None:
    """InnoEval: decisions (points), group best/ranking (groups), preferred idea (pairs: give easy and difficult
    files as two --gold)."""
    run("innoeval", task, gold=gold, pred=pred, as_json=as_json, compat=compat.value)


@app.command()
def siqa(task: Annotated[str, typer.Option(help="u (multiple choice) | s (level logits)")], gold: GoldOpt,
         pred: PredOpt, as_json: JsonOpt = False, compat: CompatOpt = CompatChoice.strict) -> None:
    """SIQA: U accuracy by question type, S SRCC/PLCC per dimension."""
    run("siqa", task, gold=gold, pred=pred, as_json=as_json, compat=compat.value)


@app.command()
def reviewmt(gold: GoldOpt, pred: PredOpt, task: Annotated[str, typer.Option(help="review")] = "review",
             as_json: JsonOpt = False, compat: CompatOpt = CompatChoice.strict) -> None:
    """ReviewMT: summary, review score and decision hit rates, score MAE, decision F1."""
    run("reviewmt", task, gold=gold, pred=pred, as_json=as_json, compat=compat.value)


@app.command()
def novelty(task: Annotated[str, typer.Option(help="pairwise | pointwise | audit")], gold: GoldOpt, pred: PredOpt,
            pred_after: Annotated[Path | None, typer.Option("--pred-after",
                                                            help="Second run, for --task audit.")] = None,
            seed: Annotated[int, typer.Option(help="Bootstrap seed (audit).")] = 0,
            n_boot: Annotated[int, typer.Option(help="Bootstrap resamples (audit).", min=1)] = 2000,
            as_json: JsonOpt = False, compat: CompatOpt = CompatChoice.strict) -> None:
    """Novelty judge: pairwise, pointwise, or the audit of two runs (flip rate, paired bootstrap CI)."""
    run("novelty", task, gold=gold, pred=pred, pred_after=pred_after, as_json=as_json, seed=seed, n_boot=n_boot,
        compat=compat.value)
