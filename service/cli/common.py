"""Shared CLI helpers: settings, migrations, JSON output, progress bars, errors."""

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.text import Text

from indexing.settings import Settings, get_settings
from service.cli.tables import FittingConsole

if TYPE_CHECKING:  # imported where used: a command's --help loads neither the database layer nor the index's
    from indexing.embedders import Embedder
    from indexing.versions import LoadedIndex

# no markup: what is printed quotes paths, ids, titles and input, which may hold "[/b]" or "[verifier]"; a table too
# wide for the terminal prints as records rather than with its headers cut
console = FittingConsole(stderr=True, markup=False)
JsonOpt = typer.Option(False, "--json", help="Print machine-readable JSON on stdout.")


def ready_settings() -> Settings:
    """The settings, with the database migrated to the newest schema."""
    from indexing.db import migrate

    settings = get_settings()
    migrate(settings.db_path)
    return settings


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def say(label: str, style: str, message: str) -> None:
    """One line to stderr: a styled label, then the message as it is (not wrapped: it may name a file)."""
    console.print(Text.assemble((label, style), " ", message), highlight=False, soft_wrap=True)


def print_warnings(warnings: list[dict]) -> None:
    """Coded warnings ({"code", "message"}) as the answers carry them, a line each."""
    for w in warnings:
        say(f"warning ({w['code']}):", "bold yellow", w["message"])


def fail(message: str, code: int = 2) -> NoReturn:
    say("error:", "bold red", message)
    raise typer.Exit(code)


@contextmanager
def progress_bars(enabled: bool = True) -> Iterator[Any]:
    """A progress(stage, advance, total) callback drawing one rich bar per stage."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn("{task.description:>8}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, transient=False) as bars:
        tasks: dict[str, TaskID] = {}

        def progress(stage: str, advance: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bars.add_task(stage, total=total)
            bars.update(tasks[stage], advance=advance, total=total)

        yield progress


def stage_bar(bars: Any, stage: str) -> Callable[[int, int], None] | None:
    """A (done, total) progress callback advancing the stage's bar by one per call, or None without bars."""
    if bars is None:
        return None
    return lambda done, total: bars(stage, 1, total)


def runs_option(run: str, system: str | None) -> list[int]:
    """Every run --run names, as every command reads it: a label shared by several systems names each one's run
    (one with --system), else a numeric id; or exit naming the option."""
    from service.runs import RunNotFound
    from service.runs import run_ids_of

    try:
        return run_ids_of(ready_settings().db_path, run, system)
    except RunNotFound as exc:
        fail(f"--run: {exc.text('--system SYSTEM')}")


def current_index(settings: Settings) -> "tuple[LoadedIndex, Embedder]":
    """The current index version and the model that built it, or exit saying what to do."""
    from indexing.embedders import load_embedder
    from indexing.embedders.runtime import manifest_backend
    from indexing.versions import IndexDamaged, load_current

    try:
        loaded = load_current(settings.indexes_dir)
    except IndexDamaged as exc:
        fail(str(exc), 1)
    if loaded is None:
        fail("no index published yet: run `hindsight index build`", 1)
    m = loaded.manifest
    try:
        embedder = load_embedder(m["model"], settings, theta=m["theta"], backend=manifest_backend(m))
    except ValueError as exc:  # e.g. a cuda-fp16 index on a machine without CUDA
        fail(f"index {loaded.version} cannot be used here: {exc}", 1)
    if embedder.revision != m["revision"]:
        fail(f"index {loaded.version} was built with revision {m['revision']}, this model is {embedder.revision}; "
             "rebuild the index", 1)
    return loaded, embedder
