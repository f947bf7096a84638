"""`hindsight score` and `hindsight serve`."""

import json
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.table import Table

from indexing.db import session_scope
from indexing.matcher.corpus import MatcherUnavailable
from indexing.windows import WindowError
from service.cli.common import JsonOpt, console, current_index, fail, print_json, progress_bars, ready_settings
from service.matching import score_ideas
from service.schemas import IdeaIn
from service.scoring import context_of, store_scores
from service.systems import plan_window


def read_ideas(path: Path) -> list[IdeaIn]:
    ideas, seen = [], {}
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            idea = IdeaIn.model_validate_json(line)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "<line>"
            fail(f"{path}:{number}: field '{where}': {err['msg']}")
        if idea.id in seen:
            fail(f"{path}:{number}: field 'id': duplicate id {idea.id!r}, first on line {seen[idea.id]}")
        seen[idea.id] = number
        ideas.append(idea)
    if not ideas:
        fail(f"{path}: no ideas")
    return ideas


def score(ideas_file: Path = typer.Argument(..., exists=True, dir_okay=False, help="JSONL of ideas."),
          out: Path = typer.Option(None, "--out", help="Write one JSON line per idea here."),
          system: str = typer.Option("default", help="The generator system that wrote the ideas."),
          run: str = typer.Option("default", help="A label for this run."),
          top_k: int = typer.Option(None, help="Papers retrieved per idea (default 20)."),
          cutoff: str = typer.Option(None, help="Window start YYYY-MM-DD inside the built window (default: the "
                                                "system's declared knowledge cutoff, else the built cutoff)."),
          until: str = typer.Option(None, help="Window end YYYY-MM-DD (default: the built end)."),
          matcher: str = typer.Option(None, help="dense or hybrid (default: the index version's)."),
          json_out: bool = JsonOpt) -> None:
    """Score ideas against the current index and store them under the run."""
    settings = ready_settings()
    if matcher not in (None, "dense", "hybrid"):
        fail(f"--matcher must be dense or hybrid, not {matcher!r}")
    ideas = read_ideas(ideas_file)
    loaded, embedder = current_index(settings)
    try:
        with session_scope(settings.db_path) as session:
            plan = plan_window(session, loaded, system=system, cutoff=cutoff, until=until)
    except WindowError as exc:
        fail(f"--{exc.field}: {exc.message}")
    for warning in plan.warnings:
        console.print(f"[bold yellow]warning ({warning['code']}):[/] {warning['message']}", highlight=False)
    top_k = top_k or settings.top_k
    try:
        context = context_of(loaded, top_k, plan, matcher)
    except MatcherUnavailable as exc:
        fail(str(exc), 1)
    results = []
    with progress_bars(not json_out) as bars:
        for start in range(0, len(ideas), 32):
            results += score_ideas(ideas[start:start + 32], loaded=loaded, embedder=embedder, top_k=top_k,
                                   window=plan.window, matcher=context.matcher)
            if bars:
                bars("score", min(32, len(ideas) - start), len(ideas))
    with session_scope(settings.db_path) as session:
        run_id = store_scores(session, system=system, label=run, ideas=ideas, results=results, context=context)
    lines = [{**r.model_dump(), **context.model_dump(), "system": system, "run": run} for r in results]
    if out:
        out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    if json_out:
        print_json({**context.model_dump(), "system": system, "run": run, "run_id": run_id,
                    "ideas": [r.model_dump() for r in results]})
        return
    table = Table("idea", "score", "matched", "best match", "similarity",
                  title=f"{system}/{run}: model {context.model}, matcher {context.matcher} {context.matcher_version}, "
                        f"index {context.index_version}, window {context.window['start']}..{context.window['end']}"
                        + (" (LEAK RISK)" if context.leak_risk else ""))
    for r in results:
        best = next((x for x in r.matches if x.above_threshold), r.matches[0] if r.matches else None)
        table.add_row(r.id, f"{r.score:.3f}", "yes" if r.matched else "no",
                      (best.title[:60] if best else "-"), f"{best.similarity:.3f}" if best else "-")
    console.print(table)
    mean = sum(r.score for r in results) / len(results)
    rate = sum(r.matched for r in results) / len(results)
    console.print(f"{len(results)} ideas: mean score {mean:.3f}, match rate {rate:.0%}"
                  + (f"; written to {out}" if out else ""), highlight=False)


def serve(host: str = typer.Option("127.0.0.1", help="Bind address."),
          port: int = typer.Option(8000, help="Port."),
          workers: int = typer.Option(1, help="Worker processes."),
          log_level: str = typer.Option("info")) -> None:
    """Run the HTTP API (like uvicorn); docs at /docs."""
    import uvicorn

    ready_settings()
    uvicorn.run("service.app:create_app", factory=True, host=host, port=port, workers=workers, log_level=log_level)
