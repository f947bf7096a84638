"""`hindsight analyze systems|correlations|quadrants`."""

from pathlib import Path

import typer
from rich.table import Table

from indexing.db import session_scope
from service import plots
from service.analyses import (
    AnalysisError, QUADRANTS, Selection, correlations, quadrant_points, quadrants, resolve_runs, systems_summary,
    table_rows, to_csv,
)
from service.analyses.quadrants import quadrant_counts
from service.analyses.selection import load_ideas
from service.cli.common import JsonOpt, console, fail, print_json, ready_settings

app = typer.Typer(help="Analyses of stored scores against LLM-judge scores.", no_args_is_help=True)

RunOpt = typer.Option(None, "--run", help="Run id or label to include (repeatable); all runs when absent.")
SystemOpt = typer.Option(None, "--system", help="System to include (repeatable); all when absent.")
ByOpt = typer.Option("system", "--by", help="Group ideas per system or per run.")
LevelOpt = typer.Option("realised", "--level", help="Decision level of the HindSight score: realised or "
                                                            "direction (hybrid matcher).")
CsvOpt = typer.Option(None, "--csv", help="Write the table as CSV to this file.", dir_okay=False)
PlotOpt = typer.Option(None, "--plot", help="Write the plot to this .png or .svg file.", dir_okay=False)
TableOpt = typer.Option(None, "--table", help="Which table --csv writes (systems: groups|comparisons; "
                                               "quadrants: counts|ideas).")


def _write_plot(path: Path | None, image: bytes | None) -> None:
    if path and image:
        path.write_bytes(image)
        console.print(f"wrote {path}", highlight=False)


def _fmt(x, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _pval(p) -> str:
    return "–" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"


def _selection(session, runs: list[str] | None, systems: list[str] | None, by: str,
               level: str = "realised") -> Selection:
    ids = resolve_runs(session, runs or [], systems=systems or None)
    return Selection(runs=ids, systems=tuple(systems or ()), group_by=by, level=level)


def _plot_format(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in plots.FORMATS:
        fail(f"--plot: {path} must end in .png or .svg")
    return fmt


def _write_csv(path: Path | None, kind: str, answer: dict, table: str | None) -> None:
    if path:
        path.write_text(to_csv(table_rows(kind, answer, table)), encoding="utf-8")
        console.print(f"wrote {path}", highlight=False)


@app.command()
def systems(run: list[str] = RunOpt, system: list[str] = SystemOpt, by: str = ByOpt, level: str = LevelOpt,
            n_resamples: int = typer.Option(2000, help="Bootstrap resamples."),
            seed: int = typer.Option(0, help="Bootstrap seed."),
            json_out: bool = JsonOpt, csv_file: Path = CsvOpt, table: str = TableOpt, plot: Path = PlotOpt) -> None:
    """Per system: ideas, mean HindSight score with a bootstrap 95% CI, match rate, judge means; pairwise tests."""
    settings = ready_settings()
    fmt = _plot_format(plot) if plot else None
    try:
        with session_scope(settings.db_path) as session:
            selection = _selection(session, run, system, by, level)
            answer = systems_summary(session, selection=selection, n_resamples=n_resamples, seed=seed)
            image = plots.distribution_plot(load_ideas(session, selection), fmt=fmt) if plot else None
        _write_csv(csv_file, "systems", answer, table)
    except AnalysisError as exc:
        fail(str(exc))
    _write_plot(plot, image)
    if json_out:
        print_json(answer)
        return
    t = Table("system", "ideas", "mean (95% CI)", "match rate",
              *(f"{j} overall" for j in answer["judges"]), title="HindSight per system")
    for g in answer["groups"]:
        ci = f"[{_fmt(g['ci'][0])}, {_fmt(g['ci'][1])}]" if g["ci"] else "[–]"
        t.add_row(g["group"], str(g["ideas"]), f"{_fmt(g['mean_score'])} {ci}", f"{100 * g['match_rate']:.0f}%",
                  *(_fmt(g["judges"][j]["overall"]["mean"], 2) for j in answer["judges"]))
    console.print(t)
    if answer["comparisons"]:
        c = Table("a vs b", "measure", "mean a", "mean b", "Mann-Whitney p", "Welch p", "Cliff's delta",
                  title="comparison")
        for row in answer["comparisons"]:
            measure = "HindSight" if row["metric"] == "hindsight" else f"{row['judge']} {row['dimension']}"
            c.add_row(f"{row['a']} vs {row['b']}", measure, _fmt(row["mean_a"]), _fmt(row["mean_b"]),
                      _pval(row["mannwhitney_p"]), _pval(row["welch_p"]), _fmt(row["effect_size"]["value"], 2))
        console.print(c)


@app.command("correlations")
def correlations_(run: list[str] = RunOpt, system: list[str] = SystemOpt, by: str = ByOpt, level: str = LevelOpt,
                  judge: str = typer.Option(None, "--judge", help="Only this judge."),
                  json_out: bool = JsonOpt, csv_file: Path = CsvOpt) -> None:
    """Spearman rho and p between the HindSight score and each judge dimension, overall and per system."""
    settings = ready_settings()
    try:
        with session_scope(settings.db_path) as session:
            answer = correlations(session, selection=_selection(session, run, system, by, level), judge=judge)
        _write_csv(csv_file, "correlations", answer, None)
    except AnalysisError as exc:
        fail(str(exc))
    if json_out:
        print_json(answer)
        return
    t = Table("scope", "judge", "dimension", "n", "rho", "p", title="Spearman correlation with the HindSight score")
    for r in answer["rows"]:
        t.add_row(r["scope"], r["judge"], r["dimension"], str(r["n"]), _fmt(r["rho"], 2), _pval(r["p"]))
    console.print(t)


@app.command("quadrants")
def quadrants_(run: list[str] = RunOpt, system: list[str] = SystemOpt, by: str = ByOpt, level: str = LevelOpt,
               judge: str = typer.Option(None, "--judge", help="The judge (needed when several scored the ideas)."),
               dimension: str = typer.Option("overall", "--dimension", help="novelty, feasibility, impact, overall"),
               hindsight_cut: str = typer.Option("matched", "--hindsight-cut", help="matched, median or a number."),
               judge_cut: str = typer.Option("median", "--judge-cut", help="median or a number."),
               sort: str = typer.Option("score", help="score, judge, idea_id or group"),
               order: str = typer.Option("desc", help="asc or desc"),
               page: int = typer.Option(1, help="Page of each quadrant's idea list."),
               page_size: int = typer.Option(20, help="Ideas per page."),
               json_out: bool = JsonOpt, csv_file: Path = CsvOpt, table: str = TableOpt, plot: Path = PlotOpt) -> None:
    """Counts and shares per system of True Positive, Hidden Gem, Overhyped, True Negative, and their ideas."""
    settings = ready_settings()
    fmt = _plot_format(plot) if plot else None
    image = None
    try:
        with session_scope(settings.db_path) as session:
            selection = _selection(session, run, system, by, level)
            options = dict(selection=selection, judge=judge, dimension=dimension, hindsight_cut=hindsight_cut,
                           judge_cut=judge_cut)
            answer = quadrants(session, **options, sort=sort, order=order, page=page, page_size=page_size)
            if csv_file:
                full = answer if table != "ideas" else quadrants(session, **options, sort=sort, order=order,
                                                                 page_size=None)
                _write_csv(csv_file, "quadrants", full, table)
            if plot:
                frame, meta = quadrant_points(session, **options)
                image = plots.quadrant_plot(frame, {**meta, "counts": quadrant_counts(frame)}, fmt=fmt)
    except AnalysisError as exc:
        fail(str(exc))
    _write_plot(plot, image)
    if json_out:
        print_json(answer)
        return
    console.print(f"{answer['judge']} · {answer['dimension']}: {answer['cuts']['hindsight']['rule']}; "
                  f"{answer['cuts']['judge']['rule']}", highlight=False)
    t = Table("system", "judged", *(label for label, _, _ in QUADRANTS.values()), title="quadrants")
    for c in answer["counts"]:
        t.add_row(c["group"], f"{c['judged']}" + (f" (+{c['unjudged']} unjudged)" if c["unjudged"] else ""),
                  *(f"{c[k]['count']} ({100 * (c[k]['share'] or 0):.0f}%)" for k in QUADRANTS))
    console.print(t)
    for key, listing in answer["ideas"].items():
        if not listing["items"]:
            continue
        lt = Table("idea", "system", "HindSight", "judge", "best match",
                   title=f"{listing['label']}: {listing['total']} (page {listing['page']}/{listing['pages']})")
        for it in listing["items"]:
            best = it["best_match"]
            lt.add_row(it["idea_id"], it["group"], _fmt(it["score"]), _fmt(it["judge_value"], 1),
                       f"{best['title'][:60]} ({best['similarity']:.2f})" if best else "–")
        console.print(lt)
