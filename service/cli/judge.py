"""`hindsight judge import|run|prompts|export|pairs|audit|innoeval`."""

import json
from pathlib import Path

import typer
from rich.table import Table

from indexing.db import session_scope
from indexing.llm import ModelUnavailable
from service.cli.common import (
    JsonOpt, console, fail, print_json, progress_bars, ready_settings, runs_option, say, stage_bar,
)
from service.judge_scores import import_judge_scores
from service.rejections import ImportRejected
from service.llm_judge import audit as audits
from service.llm_judge import innoeval, pairwise, pointwise, prompts
from service.llm_judge.backends import BACKENDS, Judge, make_judge
from service.metrics.parsing import InputFileError, MetricsInputError, read_records
from service.runs import RunNotFound, run_id_of

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
    except ImportRejected as exc:
        if json_out:
            print_json(exc.report.as_dict())
        else:
            say("rejected:", "bold red", str(exc))
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
        say("ignored fields:", "yellow", ", ".join(report.ignored_fields))


BackendOpt = typer.Option("local", "--backend", help=f"{' or '.join(BACKENDS)} (local: the packaged model).")
PromptOpt = typer.Option(prompts.DEFAULT, "--prompt", help="A prompt version (hindsight judge prompts).")
RunOpt = typer.Option(..., "--run", help="Run id, or label (every system's run with it, or one with --system).")
SystemOpt = typer.Option(None, "--system", help="Only this system's run of the label.")


def _judge(backend: str, prompt: str) -> tuple[Judge, prompts.PromptVersion]:
    check_backend(backend)
    try:
        version = prompts.get(prompt)
    except KeyError as exc:
        fail(f"--prompt: {exc.args[0]}")
    return backend_judge(backend), version


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        fail(f"--backend: expected {' or '.join(BACKENDS)}, got {backend!r}")


def backend_judge(backend: str) -> Judge:
    """The model of a checked --backend (label suggest asks through the judge's backends too), or exit saying why
    it cannot be had."""
    try:
        return make_judge(backend, ready_settings())
    except ModelUnavailable as exc:
        fail(str(exc))


def _run_id(run: str, system: str | None) -> int:
    """The one run a command needs (a label several systems share needs --system)."""
    try:
        return run_id_of(ready_settings().db_path, run, system)
    except RunNotFound as exc:
        fail(f"--run: {exc.text('--system SYSTEM')}")


@app.command("prompts")
def prompts_(json_out: bool = JsonOpt) -> None:
    """The judge's prompt versions (the default first)."""
    listed = [p.as_dict() for p in prompts.PROMPTS.values()]
    if json_out:
        print_json(listed)
        return
    table = Table("name", "sha", "default", "what it asks", title="judge prompt versions")
    for p in listed:
        table.add_row(p["name"], p["sha"], "yes" if p["default"] else "", p["summary"])
    console.print(table)


@app.command("run")
def run_(run: str = RunOpt, system: str | None = SystemOpt, backend: str = BackendOpt,
         prompt: list[str] = typer.Option([prompts.DEFAULT], "--prompt",
                                          help="A prompt version (hindsight judge prompts); repeat it to judge under "
                                               "several, each idea's prefix shared by all of them."),
         samples: int = typer.Option(1, "--samples", min=1, max=20,
                                     help="1: the expected rating over the rating tokens' probabilities (the parsed "
                                          "answer where the backend gives none); N: the mean of N answers sampled "
                                          "at temperature 1."),
         json_out: bool = JsonOpt) -> None:
    """Rate each idea of a stored run on novelty, feasibility, impact and overall (1-10). Answers are cached by
    (judge revision, idea text), so a rerun or a superset asks nothing twice and a killed run resumes. --json: one
    report (judge, ideas, new_calls, invalid per dimension, ...), or {"runs": [...]} for several prompts or runs
    (a label several systems share)."""
    settings = ready_settings()
    run_ids = runs_option(run, system)
    versions = []
    for name in dict.fromkeys(prompt):
        try:
            versions.append(prompts.get(name))
        except KeyError as exc:
            fail(f"--prompt: {exc.args[0]}")
    judge, _ = _judge(backend, versions[0].name)
    reports: list[pointwise.RunJudgement] = []
    with progress_bars(not json_out) as bars:
        for run_id in run_ids:
            done = pointwise.judge_runs(settings.db_path, run_id, judge=judge, versions=versions, samples=samples,
                                        progress=stage_bar(bars, f"run {run_id}"))
            reports += done
            if done[0].stopped:
                break
    if json_out:
        print_json(reports[0].as_dict() if len(reports) == 1 else {"runs": [r.as_dict() for r in reports]})
    else:
        for report in reports:
            invalid = ", ".join(f"{d} {n}" for d, n in report.invalid.items())
            console.print(f"run {report.run_id}: {report.judged} of {report.ideas} ideas judged as {report.judge} "
                          f"({report.revision}); {report.new_calls} new calls, {report.cached} answers from the "
                          f"cache; invalid: {invalid}; {report.seconds:.1f} s", highlight=False)
    stopped = [r for r in reports if r.stopped]
    if stopped:
        fail(f"stopped in run {stopped[0].run_id} after {min(r.judged for r in stopped)} ideas: "
             f"{stopped[0].stopped}", 3)


@app.command("export")
def export(run: str = RunOpt, system: str | None = SystemOpt,
           judge: str = typer.Option(..., "--judge", help="The judge's stored name."),
           out: Path | None = typer.Option(None, "--out", dir_okay=False, help="Write here (JSONL) instead of "
                                                                                "stdout."),
           json_out: bool = JsonOpt) -> None:
    """Write a run's scores by a judge as the JSONL `hindsight judge import` reads (a lossless round trip)."""
    settings = ready_settings()
    run_ids = runs_option(run, system)
    rows: list[dict] = []
    empty = 0
    with session_scope(settings.db_path) as session:
        for run_id in run_ids:
            some, none = pointwise.export_rows(session, run_id=run_id, judge=judge)
            rows, empty = rows + some, empty + none
    if not rows and not empty:
        fail(f"judge {judge!r} has no scores in run {', '.join(map(str, run_ids))}")
    text = pointwise.to_jsonl(rows)
    if out is None:
        print(text, end="")
        return
    out.write_text(text, encoding="utf-8")
    summary = {"file": str(out), "rows": len(rows), "without_score": empty, "judge": judge,
               **({"run_id": run_ids[0]} if len(run_ids) == 1 else {"run_ids": run_ids})}
    if json_out:
        print_json(summary)
    else:
        console.print(f"wrote {len(rows)} rows to {out}" + (f"; {empty} ideas with every dimension invalid left "
                                                             "out" if empty else ""), highlight=False)


@app.command("pairs")
def pairs(run: str = RunOpt, system: str | None = SystemOpt,
          pairs_file: Path | None = typer.Option(None, "--pairs", exists=True, dir_okay=False,
                                                 help="JSONL or JSON array of {a, b} idea ids of the run."),
          within: str | None = typer.Option(None, "--within", help="topic: every pair of ideas sharing a topic."),
          limit: int | None = typer.Option(None, "--limit", min=1, help="At most this many pairs (--within)."),
          backend: str = BackendOpt, prompt: str = PromptOpt, json_out: bool = JsonOpt) -> None:
    """Which of two ideas is more novel, asked in both orders; an order-inconsistent pair is a tie (counted).
    --within topic over a label several systems share pairs each system's run's ideas apart."""
    settings = ready_settings()
    if (pairs_file is None) == (within is None):
        fail("give --pairs FILE or --within topic")
    if within is not None and within != "topic":
        fail(f"--within: only topic is known, got {within!r}")
    # a file's pairs are one run's idea ids
    run_ids = [_run_id(run, system)] if pairs_file is not None else runs_option(run, system)
    chosen: dict[int, list] = {}
    try:
        for run_id in run_ids:
            chosen[run_id] = (pairwise.read_pairs_file(pairs_file) if pairs_file is not None
                              else pairwise.within_topic(pairwise.run_ideas(settings.db_path, run_id), limit))
    except pairwise.PairsError as exc:
        fail(str(exc))
    judge, version = _judge(backend, prompt)
    reports = []
    with progress_bars(not json_out) as bars:
        for run_id, wanted in chosen.items():
            try:
                reports.append(pairwise.judge_pairs(settings.db_path, run_id, judge=judge, prompt=version,
                                                    pairs=wanted, progress=stage_bar(bars, f"run {run_id}")))
            except pairwise.PairsError as exc:
                fail(str(exc))
            if reports[-1].stopped:
                break
    if json_out:
        print_json(reports[0].as_dict() if len(reports) == 1 else {"runs": [r.as_dict() for r in reports]})
    else:
        for run_id, report in zip(chosen, reports):
            rate = "–" if report.swap_flip_rate is None else f"{report.swap_flip_rate:.3f}"
            console.print(f"run {run_id}: {report.judged} of {report.pairs} pairs in both orders as {report.judge}; "
                          f"consistent {report.consistent}, ties {report.ties}, invalid {report.invalid}; "
                          f"order-swap flip rate {rate} ({report.swap_flips}/{report.swap_compared}); "
                          f"{report.new_calls} new calls", highlight=False)
    if reports[-1].stopped:
        fail(f"stopped after {reports[-1].judged} pairs: {reports[-1].stopped}", 3)


@app.command("audit")
def audit(judges: list[str] = typer.Option(..., "--judge", help="Two judges' stored names: --judge A --judge B."),
          runs: list[str] = typer.Option(None, "--run", help="Runs to audit, ids or labels (repeatable; a label "
                                                             "names every system's run with it); every idea both "
                                                             "judged when absent."),
          system: str | None = typer.Option(None, "--system", help="Only this system's runs of the labels."),
          cut: float | None = typer.Option(None, "--cut", help="A verdict is score >= cut (HINDSIGHT_JUDGE_CUT)."),
          n_boot: int = typer.Option(2000, "--n-boot", min=1, help="Bootstrap resamples."),
          seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
          json_out: bool = JsonOpt) -> None:
    """Per dimension, overall and per run: flips of the verdicts at the cut, rank agreement, the mean shift,
    invalid and missing counts per side, the prompt versions, bootstrap intervals."""
    settings = ready_settings()
    run_ids = list(dict.fromkeys(i for r in runs or [] for i in runs_option(r, system)))
    try:
        with session_scope(settings.db_path) as session:
            result = audits.audit(session, judges=judges, runs=run_ids or None,
                                  cut=settings.llm.judge_cut if cut is None else cut, n_boot=n_boot, seed=seed)
    except audits.AuditError as exc:
        fail(str(exc))
    if json_out:
        print_json(result)
        return
    revs = result["revisions"]
    console.print(f"a = {result['judges']['a']} ({revs['a'].get('prompt')}), b = {result['judges']['b']} "
                  f"({revs['b'].get('prompt')}); {result['rule']}", highlight=False)
    table = Table("dimension", "compared", "flips", "flip rate", "95% CI", "spearman", "kendall", "shift b-a",
                  "invalid a/b", "missing a/b", title=f"judge audit over {result['ideas']} ideas")
    for dim, b in result["dimensions"].items():
        ci = b["flip_rate_ci95"]
        table.add_row(dim, str(b["n_compared"]), str(b["flips"]),
                      "–" if b["flip_rate"] is None else f"{b['flip_rate']:.3f}",
                      "–" if ci is None else f"{ci[0]:.3f}-{ci[1]:.3f}",
                      "–" if b["spearman"] is None else f"{b['spearman']:.3f}",
                      "–" if b["kendall"] is None else f"{b['kendall']:.3f}",
                      "–" if b["mean_shift"] is None else f"{b['mean_shift']:+.2f}",
                      f"{b['invalid']['a']}/{b['invalid']['b']}", f"{b['missing']['a']}/{b['missing']['b']}")
    console.print(table)
    for side, swap in result["pairwise"].items():
        if swap:
            console.print(f"{result['judges'][side]}: pairwise novelty over {swap['pairs']} pairs in both orders, "
                          f"order-swap flip rate {swap['swap_flip_rate']} ({swap['swap_flips']}/"
                          f"{swap['swap_compared']}), invalid {swap['invalid']}", highlight=False)


@app.command("innoeval")
def innoeval_(points: Path | None = typer.Option(None, "--points", exists=True, dir_okay=False,
                                                 help="InnoEval's points file (conference_points*.jsonl)."),
              pairs_file: Path | None = typer.Option(None, "--pairs", exists=True, dir_okay=False,
                                                     help="InnoEval's pairs file (conference_pairs_*.json)."),
              backend: str = BackendOpt, prompt: str = PromptOpt,
              limit: int | None = typer.Option(None, "--limit", min=1, help="The first N items only."),
              out: Path | None = typer.Option(None, "--out", dir_okay=False,
                                              help="Write one prediction row per item (JSONL), as `hindsight "
                                                   "metrics innoeval --pred` reads."),
              json_out: bool = JsonOpt) -> None:
    """The judge's predictions on InnoEval's own files, evaluated by the product's InnoEval metrics; pairs are
    asked in both orders, with the order-swap flip rate."""
    if (points is None) == (pairs_file is None):
        fail("give --points FILE or --pairs FILE")
    path = points or pairs_file
    assert path is not None
    try:
        gold, _ = read_records(path)
    except InputFileError as exc:
        fail(str(exc))
    gold = gold[:limit] if limit else gold
    settings = ready_settings()
    judge, version = _judge(backend, prompt)
    run = innoeval.judge_points if points is not None else innoeval.judge_pairs
    with progress_bars(not json_out) as bars:
        try:
            result = run(settings.db_path, gold, judge=judge, prompt=version,
                         progress=(lambda done, total: bars("innoeval", 1, total)) if bars else None)
        except MetricsInputError as exc:
            fail(f"{path}: {exc}")
    result["file"], result["limit"] = str(path), limit
    if out is not None:
        out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result["rows"]), encoding="utf-8")
    if json_out:
        print_json(result)
    else:
        _print_innoeval(result)
    if result["stopped"]:
        fail(f"stopped after {result['answered']} of {result['items']} items: {result['stopped']}", 3)


def _print_innoeval(result: dict) -> None:
    head = (f"{result['task']} of {result['file']}: {result['answered']} of {result['items']} items as "
            f"{result['judge']}; {result['new_calls']} new calls")
    if result["task"] == "points":
        m = (result["report"] or {}).get("metrics", {})
        console.print(f"{head}; invalid {result['invalid']}; accuracy {m.get('full.accuracy')}, macro-F1 "
                      f"{m.get('full.macro_f1')}, binary accuracy {m.get('binary.accuracy')}", highlight=False)
        return
    acc = {k: (v or {}).get("metrics", {}).get("accuracy") for k, v in result["reports"].items()}
    console.print(f"{head}; accuracy both orders {acc['both']} (ties {result['ties']} count wrong), as shown "
                  f"{acc['ab']}, swapped {acc['ba']}; order-swap flip rate {result['swap_flip_rate']} "
                  f"({result['swap_flips']}/{result['swap_compared']}); invalid answers "
                  f"{result['invalid_answers']}", highlight=False)
