"""`hindsight analyze systems|correlations|quadrants`."""

from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.table import Table

from indexing.db import session_scope
from service.analyses import (
    AnalysisError, QUADRANTS, Selection, correlations, quadrant_points, quadrants, resolve_runs, systems_summary,
    table_rows, to_csv,
)
from service.analyses.quadrants import quadrant_counts
from service.analyses.selection import load_ideas
from indexing.windows import WindowError
from service.analyses.cutoffs import cutoff_rows, cutoff_sensitivity
from service.cli.label_tables import print_labelled
from service.report.parts import fmt as number, pval
from service.cli.common import JsonOpt, console, current_index, fail, print_json, print_warnings, ready_settings

app = typer.Typer(help="Analyses of stored scores against LLM-judge scores.", no_args_is_help=True)

RunOpt = typer.Option(None, "--run", help="Run id or label to include (repeatable); all runs when absent.")
SystemOpt = typer.Option(None, "--system", help="System to include (repeatable); all when absent.")
ByOpt = typer.Option("system", "--by", help="Group ideas per system, per run, or per system and window.")
CutoffOpt = typer.Option(None, "--cutoff", help="Only scores whose window starts on this date (YYYY-MM-DD).")
UntilOpt = typer.Option(None, "--until", help="Only scores whose window ends on this date (YYYY-MM-DD).")
PoolOpt = typer.Option(False, "--pool-windows", help="Pool scores made in different windows (refused by default: "
                                                    "they measure different futures).")
LevelOpt = typer.Option("realised", "--level", help="Decision level of the HindSight score: realised or "
                                                            "direction (hybrid matcher).")
CsvOpt = typer.Option(None, "--csv", help="Write the table as CSV to this file.", dir_okay=False)
PlotOpt = typer.Option(None, "--plot", help="Write the plot to this .png or .svg file.", dir_okay=False)
TableOpt = typer.Option(None, "--table", help="Which table --csv writes (systems: groups|comparisons; "
                                               "quadrants: counts|ideas).")


# the analyses name the HTTP query parameter at fault; on the command line it is this option
OPTIONS = {"run": "--run", "runs": "--run", "systems": "--system", "group_by": "--by", "pool_windows": "--pool-windows",
           "hindsight_cut": "--hindsight-cut", "judge_cut": "--judge-cut", "page_size": "--page-size"}
CLI_OPTIONS = {"annotator", "confidence", "cutoff", "until", "dimension", "judge", "level", "order", "page",
               "predictor", "sort", "table"}


def _fail(exc: AnalysisError) -> NoReturn:
    """The error naming the command line's option where the analysis named a query parameter."""
    option = OPTIONS.get(exc.field) or (f"--{exc.field}" if exc.field in CLI_OPTIONS else exc.field)
    fail(f"{option}: {exc.message}")


def _write_plot(path: Path | None, image: bytes | None) -> None:
    if path and image:
        path.write_bytes(image)
        console.print(f"wrote {path}", highlight=False)


def _selection(session, runs: list[str] | None, systems: list[str] | None, by: str, cutoff: str | None = None,
               until: str | None = None, pool: bool = False, level: str = "realised") -> Selection:
    ids = resolve_runs(session, runs or [], systems=systems or None)
    return Selection(runs=ids, systems=tuple(systems or ()), group_by=by, cutoff=cutoff, until=until,
                     pool_windows=pool, level=level)


def _plots():
    """service.plots, imported when a plot is asked for: matplotlib would cost every CLI start half a second."""
    from service import plots

    return plots


def _plot_format(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in _plots().FORMATS:
        fail(f"--plot: {path} must end in .png or .svg")
    return fmt


def _write_csv(path: Path | None, kind: str, answer: dict, table: str | None) -> None:
    if path:
        path.write_text(to_csv(table_rows(kind, answer, table)), encoding="utf-8")
        console.print(f"wrote {path}", highlight=False)


@app.command()
def systems(run: list[str] = RunOpt, system: list[str] = SystemOpt, by: str = ByOpt, level: str = LevelOpt,
            cutoff: str = CutoffOpt, until: str = UntilOpt, pool_windows: bool = PoolOpt,
            n_resamples: int = typer.Option(2000, help="Bootstrap resamples."),
            seed: int = typer.Option(0, help="Bootstrap seed."),
            labels: bool = typer.Option(False, "--labels", help="Estimates from people's labels of random draws: "
                                                                "matcher, labels_only and ppi (docs/labels.md)."),
            confidence: float = typer.Option(0.95, "--confidence", min=0.5, max=0.999, help="With --labels."),
            predictor: str = typer.Option("decision", "--predictor", help="With --labels: decision, probability "
                                                                          "or cosine (fixed in advance)."),
            annotator: str = typer.Option(None, "--annotator", help="With --labels: whose labels (default: the "
                                                                    "first to label)."),
            json_out: bool = JsonOpt, csv_file: Path = CsvOpt, table: str = TableOpt, plot: Path = PlotOpt) -> None:
    """Per system: ideas, mean HindSight score with a bootstrap 95% CI, match rate, judge means; pairwise tests."""
    if labels:
        if csv_file or plot:
            fail("--labels answers in a table or --json; --csv and --plot are for the judge analysis")
        _labelled(run, system, by, level, cutoff, until, pool_windows, confidence, predictor, annotator, json_out)
        return
    settings = ready_settings()
    fmt = _plot_format(plot) if plot else None
    try:
        with session_scope(settings.db_path) as session:
            selection = _selection(session, run, system, by, cutoff, until, pool_windows, level)
            answer = systems_summary(session, selection=selection, n_resamples=n_resamples, seed=seed)
            image = _plots().distribution_plot(load_ideas(session, selection), fmt=fmt) if fmt else None
        _write_csv(csv_file, "systems", answer, table)
    except AnalysisError as exc:
        _fail(exc)
    _write_plot(plot, image)
    if json_out:
        print_json(answer)
        return
    print_warnings(answer.get("warnings", []))
    t = Table("system", "ideas", "mean (95% CI)", "match rate",
              *(f"{j} overall" for j in answer["judges"]), title="HindSight per system")
    for g in answer["groups"]:
        ci = f"[{number(g['ci'][0])}, {number(g['ci'][1])}]" if g["ci"] else "[–]"
        t.add_row(g["group"], str(g["ideas"]), f"{number(g['mean_score'])} {ci}", f"{100 * g['match_rate']:.0f}%",
                  *(number(g["judges"][j]["overall"]["mean"], 2) for j in answer["judges"]))
    console.print(t)
    if answer.get("prior_art"):
        _print_prior_art(answer)
    tables: dict[tuple[str, str], Table] = {}  # a table per pair of groups, so that it fits 80 columns
    for row in answer["comparisons"]:
        c = tables.setdefault((row["a"], row["b"]), Table("measure", "mean a", "mean b", "MW p", "Welch p", "delta",
                                                          title=f"comparison: a = {row['a']}, b = {row['b']}"))
        measure = ("HindSight" if row["metric"] == "hindsight" else "anticipation"
                   if row["metric"] == "anticipation" else f"{row['metric'][5:]} rate"
                   if row["metric"].startswith("rate_") else f"{row['judge']} {row['dimension']}")
        c.add_row(measure, number(row["mean_a"]), number(row["mean_b"]), pval(row["mannwhitney_p"]),
                  pval(row["welch_p"]), number(row["effect_size"]["value"], 2))
    for c in tables.values():
        console.print(c)
    if tables:
        console.print("MW p: Mann-Whitney U test; Welch p: Welch's t-test; delta: Cliff's delta of a over b",
                      highlight=False)


def _rate(r: dict) -> str:
    """A class rate with its interval, in percent: "25% [5-70]"."""
    if r["rate"] is None:
        return "–"
    return f"{100 * r['rate']:.0f}%" + (f" [{100 * r['ci'][0]:.0f}-{100 * r['ci'][1]:.0f}]" if r["ci"] else "")


def _print_prior_art(answer: dict) -> None:
    """The prior-art classes per group at both levels (rates of the ideas of known class, Wilson 95% intervals),
    then each group's anticipation score beside its HindSight mean."""
    from service.prior_art.classes import CLASSES

    print_warnings(answer["prior_art"].get("warnings", []))
    heads = {"anticipated": "anticip.", "recalled": "recalled", "already_published": "already", "unrealised": "unreal."}
    for level in answer["prior_art"]["levels"]:
        t = Table("system", *(heads[c] for c in CLASSES), "unknown", show_edge=False,
                  title=f"prior art, {level} level: % of known [95% CI]")
        for g in answer["groups"]:
            p = g.get("prior_art")
            if p:
                t.add_row(g["group"], *(_rate(p["rates"][level][c]) for c in CLASSES), str(p["unknown"]))
        console.print(t)
    for g in answer["groups"]:
        p = g.get("prior_art")
        if p:
            low_high = p["anticipation_ci"]
            ci = f" [{number(low_high[0])}, {number(low_high[1])}]" if low_high else ""
            known = f", knowledge cutoff {', '.join(p['knowledge_cutoffs'])}: {p['readable_prior_art']} ideas with " \
                    f"readable prior art, {p['later_prior_art']} with later" if p["knowledge_cutoffs"] else ""
            console.print(f"{g['group']}: anticipation score {number(p['anticipation_score'])}{ci} beside HindSight "
                          f"{number(g['mean_score'])}; look-back {', '.join(p['lookback_windows'])}{known}",
                          highlight=False)


def _labelled(run, system, by, level, cutoff, until, pool, confidence, predictor, annotator, json_out) -> None:
    """`analyze systems --labels`: the three estimates per group and metric, the differences, the agreement."""
    from service.labels.estimates import labelled_summary  # numpy-heavy and only for this option

    settings = ready_settings()
    try:
        with session_scope(settings.db_path) as session:
            answer = labelled_summary(session, selection=_selection(session, run, system, by, cutoff, until, pool,
                                                                    level),
                                      confidence=confidence, predictor=predictor, annotator=annotator,
                                      shown=settings.labels.labels_top_k, indexes_dir=settings.indexes_dir)
    except AnalysisError as exc:
        _fail(exc)
    if json_out:
        print_json(answer)
        return
    print_labelled(answer, confidence, level)


@app.command("correlations")
def correlations_(run: list[str] = RunOpt, system: list[str] = SystemOpt, by: str = ByOpt, level: str = LevelOpt,
                  cutoff: str = CutoffOpt, until: str = UntilOpt, pool_windows: bool = PoolOpt,
                  judge: str = typer.Option(None, "--judge", help="Only this judge."),
                  json_out: bool = JsonOpt, csv_file: Path = CsvOpt) -> None:
    """Spearman rho and p between the HindSight score and each judge dimension, overall and per system."""
    settings = ready_settings()
    try:
        with session_scope(settings.db_path) as session:
            answer = correlations(session, selection=_selection(session, run, system, by, cutoff, until,
                                                                pool_windows, level), judge=judge)
        _write_csv(csv_file, "correlations", answer, None)
    except AnalysisError as exc:
        _fail(exc)
    if json_out:
        print_json(answer)
        return
    print_warnings(answer.get("warnings", []))
    t = Table("scope", "judge", "dimension", "n", "rho", "95% CI", "p", title="Spearman correlation with the "
                                                                            "HindSight score")
    for r in answer["rows"]:
        t.add_row(r["scope"], r["judge"], r["dimension"], str(r["n"]), number(r["rho"], 2), _rho_ci(r), pval(r["p"]))
    console.print(t)
    prior = answer.get("prior_art")
    if prior:
        t = Table("scope", "judge", "dimension", "n", "had", "rho", "95% CI", "p",
                  title="Spearman correlation with had prior art (a realised match before the cutoff)")
        for r in prior["rows"]:
            t.add_row(r["scope"], r["judge"], r["dimension"], str(r["n"]), str(r["had_prior_art"]),
                      number(r["rho"], 2), _rho_ci(r), pval(r["p"]))
        console.print(t)


def _rho_ci(r: dict) -> str:
    return f"[{r['ci'][0]:.2f}, {r['ci'][1]:.2f}]" if r.get("ci") else "–"


@app.command("quadrants")
def quadrants_(run: list[str] = RunOpt, system: list[str] = SystemOpt, by: str = ByOpt, level: str = LevelOpt,
               cutoff: str = CutoffOpt, until: str = UntilOpt, pool_windows: bool = PoolOpt,
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
            selection = _selection(session, run, system, by, cutoff, until, pool_windows, level)
            options: dict[str, Any] = dict(selection=selection, judge=judge, dimension=dimension,
                                           hindsight_cut=hindsight_cut, judge_cut=judge_cut)
            answer = quadrants(session, **options, sort=sort, order=order, page=page, page_size=page_size)
            if csv_file:
                full = answer if table != "ideas" else quadrants(session, **options, sort=sort, order=order,
                                                                 page_size=None)
                _write_csv(csv_file, "quadrants", full, table)
            if fmt:
                frame, meta = quadrant_points(session, **options)
                image = _plots().quadrant_plot(frame, {**meta, "counts": quadrant_counts(frame)}, fmt=fmt)
    except AnalysisError as exc:
        _fail(exc)
    _write_plot(plot, image)
    if json_out:
        print_json(answer)
        return
    print_warnings(answer.get("warnings", []))
    console.print(f"{answer['judge']} · {answer['dimension']}: {answer['cuts']['hindsight']['rule']}; "
                  f"{answer['cuts']['judge']['rule']}", highlight=False)
    t = Table("system", "judged", *(label for label, _, _ in QUADRANTS.values()), title="quadrants")
    for c in answer["counts"]:
        t.add_row(c["group"], f"{c['judged']}" + (f" (+{c['unjudged']} unjudged)" if c["unjudged"] else ""),
                  *(f"{c[k]['count']} ({100 * (c[k]['share'] or 0):.0f}%)" for k in QUADRANTS))
    console.print(t)
    for listing in answer["ideas"].values():
        if not listing["items"]:
            continue
        lt = Table("idea", "system", "HindSight", "judge", "best match",
                   title=f"{listing['label']}: {listing['total']} (page {listing['page']}/{listing['pages']})")
        for it in listing["items"]:
            best = it["best_match"]
            lt.add_row(it["idea_id"], it["group"], number(it["score"]), number(it["judge_value"], 1),
                       f"{best['title'][:60]} ({best['similarity']:.2f})" if best else "–")
        console.print(lt)


@app.command("cutoffs")
def cutoffs_(run: list[str] = RunOpt, system: list[str] = SystemOpt,
             by: str = typer.Option("system", "--by", help="Group per system or per run."),
             cutoffs: str = typer.Option(..., "--cutoffs", help="Comma-separated cutoff dates inside the built "
                                                                "window, e.g. 2023-06-01,2023-12-01,2024-06-01."),
             until: str = typer.Option(None, "--until", help="Window end for every cutoff (default: the built end)."),
             top_k: int = typer.Option(None, "--top-k", help="Papers retrieved per idea (default 20)."),
             n_resamples: int = typer.Option(2000, help="Bootstrap resamples."),
             seed: int = typer.Option(0, help="Bootstrap seed."),
             json_out: bool = JsonOpt, csv_file: Path = CsvOpt, plot: Path = PlotOpt) -> None:
    """Cutoff sensitivity: the runs' ideas re-scored at each cutoff of the current index (nothing stored): mean
    score, match rate and the system comparison per cutoff, and whether the comparison survives the shift."""
    settings = ready_settings()
    if by not in ("system", "run"):
        fail(f"--by: expected system or run, got {by!r}")
    fmt = _plot_format(plot) if plot else None
    loaded, embedder = current_index(settings)
    try:
        with session_scope(settings.db_path) as session:
            answer = cutoff_sensitivity(session, loaded=loaded, embedder=embedder,
                                        selection=_selection(session, run, system, by), cutoffs=cutoffs,
                                        until=until, top_k=top_k or settings.matcher.top_k, n_resamples=n_resamples,
                                        seed=seed)
    except WindowError as exc:
        fail(f"--{exc.field}: {exc.message}")
    except AnalysisError as exc:
        _fail(exc)
    if csv_file:
        csv_file.write_text(to_csv(cutoff_rows(answer)), encoding="utf-8")
        console.print(f"wrote {csv_file}", highlight=False)
    _write_plot(plot, _plots().cutoff_plot(answer, fmt=fmt) if fmt else None)
    if json_out:
        print_json(answer)
        return
    t = Table("cutoff", "papers", *(f"{g} mean (95% CI)" for g in _group_names(answer)),
              *(f"{g} match" for g in _group_names(answer)), "leader",
              title=f"cutoff sensitivity: index {answer['index_version']}, window end {answer['until']}, "
                    f"{answer['ideas']} ideas re-scored (not stored)")
    for e in answer["cutoffs"]:
        by_name = {g["group"]: g for g in e["groups"]}
        cells = []
        for name in _group_names(answer):
            g = by_name[name]
            ci = f" [{number(g['ci'][0])}, {number(g['ci'][1])}]" if g["ci"] else ""
            cells.append(f"{number(g['mean_score'])}{ci}" + (" LEAK" if g["leak_risk"] else ""))
        rates = [f"{100 * (by_name[n]['match_rate'] or 0):.0f}%" for n in _group_names(answer)]
        lead = ", ".join(f"{c['a'] if (c['mean_a'] or 0) > (c['mean_b'] or 0) else c['b']} "
                         f"(p {pval(c['mannwhitney_p'])})" for c in e["comparisons"]) or "–"
        t.add_row(e["cutoff"], str(e["papers"]), *cells, *rates, lead)
    console.print(t)
    for pair in answer["stability"]:
        verdict = "holds at every cutoff" if pair["consistent"] else "does NOT hold at every cutoff"
        console.print(f"{pair['a']} vs {pair['b']}: the leader {verdict} "
                      f"({', '.join(str(x) for x in pair['leader_by_cutoff'])})", highlight=False)
    for e in answer["cutoffs"]:
        print_warnings(e["warnings"])


def _group_names(answer: dict) -> list[str]:
    return sorted({g["group"] for e in answer["cutoffs"] for g in e["groups"]})
