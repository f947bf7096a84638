"""`hindsight score`."""

import json
from pathlib import Path

import typer
from rich.table import Table

from indexing.matcher.serving import MatcherUnavailable, matcher_version_of
from indexing.matcher.verifier import NAMES, VerifierUnavailable, verifier_step
from indexing.windows import WindowError
from service.cli.common import (
    JsonOpt, console, current_index, fail, print_json, print_warnings, progress_bars, ready_settings,
)
from service.scoring.flow import score_run
from service.ideas import FORMATS, LayoutError, ReadResult, mapping_named, read_path
from service.schemas import idea_line
from service.systems import SystemInputError


def read_ideas(path: Path, fmt: str = "auto", mapping: str | None = None, skip_invalid: bool = False) -> ReadResult:
    """The ideas of a file or directory; exits naming the file, record and field of what cannot be read."""
    try:
        read = read_path(path, fmt, mappings=mapping_named(mapping))
    except LayoutError as exc:
        fail(str(exc))
    if read.refusals and not skip_invalid:
        shown = "\n".join(f"  {r}" for r in read.refusals[:20])
        more = f"\n  ... and {len(read.refusals) - 20} more" if len(read.refusals) > 20 else ""
        fail(f"{path}: {len(read.refusals)} of {read.read} ideas refused, nothing scored (--skip-invalid scores the "
             f"others):\n{shown}{more}")
    if not read.ideas:
        fail(f"{path}: no ideas" + (f" ({len(read.refusals)} refused)" if read.refusals else ""))
    return read


def score(ideas_path: Path = typer.Argument(..., exists=True, metavar="FILE|DIR",
                                            help="Ideas: a file or a directory of files (see --format)."),
          format: str = typer.Option("auto", "--format", help=f"{', '.join(FORMATS)}: auto recognises each file."),
          mapping: str = typer.Option(None, "--mapping", help="Which fields make problem and method: AI-Researcher "
                                                              "proposal (default), proposal+motivation, "
                                                              "proposal+plan, proposal+all, seed, seed+motivation; "
                                                              "AI-Scientist title+experiment (default), experiment."),
          knowledge_cutoff: str = typer.Option(None, "--knowledge-cutoff",
                                               help="YYYY-MM-DD: declare the system's knowledge cutoff (as "
                                                    "`hindsight system set`) before scoring."),
          skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Score the readable ideas and report the "
                                                                          "refused ones (default: refuse the import)."),
          out: Path = typer.Option(None, "--out", help="Write one JSON line per idea here."),
          system: str = typer.Option("default", help="The generator system that wrote the ideas."),
          run: str = typer.Option("default", help="A label for this run."),
          top_k: int = typer.Option(None, help="Papers retrieved per idea (default 20)."),
          cutoff: str = typer.Option(None, help="Window start YYYY-MM-DD inside the built window (default: the "
                                                "system's declared knowledge cutoff, else the built cutoff)."),
          until: str = typer.Option(None, help="Window end YYYY-MM-DD (default: the built end)."),
          matcher: str = typer.Option(None, help="dense or hybrid (default: the index version's)."),
          verifier: str = typer.Option(None, help="auto (local where installed, else none), local, openai or none: "
                                                  "the model that reads each idea's top candidates (default "
                                                  "HINDSIGHT_VERIFIER)."),
          verifier_top_k: int = typer.Option(None, "--verifier-top-k", min=1, max=50,
                                             help="Candidates per idea the verifier reads (default 5)."),
          prior_art: bool = typer.Option(None, "--prior-art/--no-prior-art",
                                         help="Also decide each idea's top K papers in the look-back window before "
                                              "the cutoff and give its prior-art class (default HINDSIGHT_PRIOR_ART, "
                                              "on)."),
          lookback_days: int = typer.Option(None, "--lookback-days", min=1, max=36_500,
                                            help="Days the look-back window reaches before the cutoff (default "
                                                 "730)."),
          json_out: bool = JsonOpt) -> None:
    """Score ideas as a generator wrote them (HindSight JSONL, AI-Researcher plans, AI-Scientist ideas.json) against
    the current index and store them under the run; AI-Scientist's own ratings become judge `ai-scientist-self`."""
    settings = ready_settings()
    if matcher not in (None, "dense", "hybrid"):
        fail(f"--matcher must be dense or hybrid, not {matcher!r}")
    if format not in FORMATS:
        fail(f"--format: expected one of {', '.join(FORMATS)}, got {format!r}")
    if verifier not in (None, *NAMES):
        fail(f"--verifier must be one of {', '.join(NAMES)}, not {verifier!r}")
    read = read_ideas(ideas_path, format, mapping, skip_invalid)
    loaded, embedder = current_index(settings)
    try:
        step = verifier_step(verifier or settings.matcher.verifier, settings, verifier_top_k,
                             matcher_version=matcher_version_of(loaded, matcher))
    except VerifierUnavailable as exc:
        fail(f"--verifier: {exc}")
    with progress_bars(not json_out) as bars:
        try:
            done = score_run(settings, loaded=loaded, embedder=embedder, read=read, system=system, run=run,
                             knowledge_cutoff=knowledge_cutoff, cutoff=cutoff, until=until, top_k=top_k,
                             matcher=matcher, verifier=step, prior_art=prior_art, lookback_days=lookback_days,
                             progress=(lambda n, total: bars("score", n, total)) if bars else None)
        except SystemInputError as exc:
            fail(f"--{exc.field.replace('_', '-')}: {exc}")
        except WindowError as exc:
            fail(f"--{exc.field}: {exc.message}")
        except (MatcherUnavailable, VerifierUnavailable) as exc:
            fail(str(exc), 1)
    context, results, run_id, ratings = done.context, done.results, done.run_id, done.ratings
    print_warnings(context.warnings)
    counts = {**read.counts(), "scored": len(results)}
    if out:
        out.write_text("".join(json.dumps(idea_line(r, context, system=system, run=run)) + "\n" for r in results))
    if json_out:
        print_json({**context.model_dump(), "system": system, "run": run, "run_id": run_id, "read": counts,
                    "judge_scores": ratings, "ideas": [r.model_dump() for r in results]})
        return
    lookback = context.lookback_window
    table = Table("idea", "topic", "score", "matched", *(("prior art",) if lookback else ()), "best match",
                  "similarity",
                  # the marker leads, so that wrapping a long title never splits it
                  title=("LEAK RISK: " if context.leak_risk else "")
                        + f"{system}/{run}: model {context.model}, "
                        + f"matcher {context.matcher} {context.matcher_version}, "
                        + (f"verifier {context.verifier} (top {context.verifier_top_k}), " if context.verifier else "")
                        + f"index {context.index_version}, window {context.window['start']}..{context.window['end']}"
                        + (f", look-back {lookback_text(lookback)}" if lookback else ""))
    for r in results:
        best = next((x for x in r.matches if x.above_threshold), r.matches[0] if r.matches else None)
        table.add_row(r.id, (r.origin.topic or "-") if r.origin else "-", f"{r.score:.3f}",
                      "yes" if r.matched else "no", *((r.prior_art.class_realised if r.prior_art else "-",)
                                                      if lookback else ()),
                      (best.title[:60] if best else "-"), f"{best.similarity:.3f}" if best else "-")
    console.print(table)
    mean = sum(r.score for r in results) / len(results)
    rate = sum(r.matched for r in results) / len(results)
    console.print(f"read {read.read} ideas from {read.files} file(s) ({', '.join(read.formats)}): {len(results)} "
                  f"scored, {len(read.refusals)} refused", highlight=False)
    for refusal in read.refusals:
        console.print(f"  refused: {refusal}", highlight=False)
    for note in read.notes:
        console.print(f"  note: {note}", highlight=False)
    console.print(f"{len(results)} ideas: mean score {mean:.3f}, match rate {rate:.0%}"
                  + (f"; written to {out}" if out else ""), highlight=False)
    if lookback:
        for line in prior_art_lines(results, lookback):
            console.print(line, highlight=False)
    if ratings:
        console.print(f"the generator's own ratings stored as judge {', '.join(ratings['judges'])} "
                      f"({', '.join(ratings['dimensions'])}) for {ratings['ideas']} ideas", highlight=False)


def lookback_text(lookback: dict) -> str:
    """The look-back window as the score command's title names it."""
    if lookback["start"] is None:
        return f"none before {lookback['end']} (unknown)"
    return f"{lookback['start']}..{lookback['end']}" + (" (clipped)" if lookback["clipped"] else "")


def prior_art_lines(results: list, lookback: dict) -> list[str]:
    """The prior-art classes counted at each level, with the knowledge cutoff beside them."""
    from service.prior_art.classes import ALL_CLASSES

    lines = []
    for level in ("realised", "direction"):
        counts = {c: sum((getattr(r.prior_art, f"class_{level}") if r.prior_art else None) == c for r in results)
                  for c in ALL_CLASSES}
        lines.append(f"prior art ({level}): " + ", ".join(f"{c} {n}" for c, n in counts.items() if n))
    if lookback["knowledge_cutoff"]:
        before = sum(bool(r.prior_art and r.prior_art.n_realised_before_knowledge) for r in results)
        after = sum(bool(r.prior_art and r.prior_art.n_realised_after_knowledge) for r in results)
        lines.append(f"knowledge cutoff {lookback['knowledge_cutoff']}: {before} ideas with realised prior art the "
                     f"generator could have read, {after} with realised prior art published after it")
    return lines
