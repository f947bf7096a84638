"""`hindsight calibrate` (threshold from positive pairs, null distribution; or the hybrid fit) and `hindsight
evaluate`: argument parsing and printing over indexing.calibration and indexing.matcher."""

from datetime import date
from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from indexing import calibration as cal
from indexing.embedders import load_embedder
from indexing.embedders.thetas import SHIPPED, user_registry, write_entry
from indexing.matcher.corpus import MatcherUnavailable
from indexing.matcher.evaluate import evaluate_kinds, evaluate_sources, with_swaps
from indexing.matcher.labelled import pool_by_id, read_labelled
from indexing.matcher.corpus import matcher_version_of
from indexing.matcher.verifier import VerifierUnavailable, verifier_step
from indexing.windows import iso_day
from service.cli import calibrate_hybrid, calibrate_verifier
from service.cli.common import (
    JsonOpt,
    console,
    current_index,
    fail,
    print_json,
    progress_bars,
    ready_settings,
)
from service.cli.evaluate_kinds import print_kinds


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return iso_day(value)
    except ValueError:
        fail(f"{option}: {value.strip()[:40]!a} is not a date (YYYY-MM-DD)")


def calibrate(pairs: list[Path] = typer.Option(..., "--pairs", exists=True, dir_okay=False,
                                               help="Positive pairs: JSONL/JSON/CSV of {id, text | problem+method, "
                                                    "paper_id | paper_ids}; with --matcher hybrid, labelled ideas "
                                                    "(repeatable: one file per field, or fields in `fold`)."),
              target_precision: float = typer.Option(0.9, min=0.0, max=1.0, help="Precision the theta must reach."),
              model: str = typer.Option(None, help="Embedder to calibrate (default HINDSIGHT_MODEL)."),
              top_k: int = typer.Option(None, help="Papers retrieved per idea (default HINDSIGHT_TOP_K, 20)."),
              paper_text: str = typer.Option("title+abstract", help="What a paper is embedded as: title+abstract "
                                             "(as the index does) or abstract (when ideas are titles)."),
              cutoff: str = typer.Option(None, help="Only papers from this date (default: all in the database)."),
              until: str = typer.Option(None, help="Only papers up to this date."),
              step: float = typer.Option(0.01, min=0.001, max=0.1, help="Theta grid step."),
              null: bool = typer.Option(False, "--null", help="Also report the null distribution (random pairs)."),
              null_sample: int = typer.Option(1_000_000, help="At most this many null pairs (random sample)."),
              theta: list[float] = typer.Option([], "--theta", help="Report these thetas too (and their null "
                                                "percentile); repeatable."),
              csv_out: Path = typer.Option(None, "--csv", dir_okay=False, help="Write the curve as CSV."),
              plot: Path = typer.Option(None, "--plot", dir_okay=False, help="Write a PNG of the curve (and null)."),
              write: bool = typer.Option(False, "--write", help="Record the picked theta in the model registry; "
                                         "it takes effect at the next index build."),
              registry: Path = typer.Option(None, help="Registry file for --write (default $HINDSIGHT_HOME/"
                                            f"thetas.json; the shipped one is {SHIPPED.name} in the package); "
                                            "with --matcher hybrid, the matcher registry (default $HINDSIGHT_HOME/"
                                            "matchers/MODEL-hybrid.json)."),
              matcher: str = typer.Option("dense", help="dense: pick theta from positive pairs; hybrid: fit the "
                                          "realised/direction models on labelled ideas (kind, source_paper_id, "
                                          "source_venue) and write the matcher registry."),
              target_false_match: float = typer.Option(0.05, min=0.0, max=1.0, help="hybrid: the any-match rate "
                                                       "each negative kind may reach (out-of-fold)."),
              report: Path = typer.Option(None, dir_okay=False, help="hybrid: write the calibration report here "
                                          "(markdown, with a PNG and JSON beside it)."),
              verifier: str = typer.Option(None, help="local, openai or auto: fit how the verifier's answers combine "
                                           "with the hybrid matcher's on labelled ideas (nested leave-one-field-"
                                           "out), written to $HINDSIGHT_HOME/verifier-fits.json or --registry."),
              verifier_top_k: int = typer.Option(None, "--verifier-top-k", min=1, max=50,
                                                 help="--verifier: candidates per idea read (default 5)."),
              swaps: bool = typer.Option(False, "--swaps", help="--verifier: add a method swap per realised idea."),
              cached_only: bool = typer.Option(False, "--cached-only", help="--verifier: fit on the ideas whose "
                                               "pairs are all in the verdict cache; read nothing new."),
              json_out: bool = JsonOpt) -> None:
    """Pick the match threshold for a model from positive (idea, paper) pairs, or fit the hybrid matcher."""
    settings = ready_settings()
    if matcher not in ("dense", "hybrid"):
        fail(f"--matcher must be dense or hybrid, not {matcher!r}")
    start, end = _day(cutoff, "--cutoff"), _day(until, "--until")
    if verifier:
        calibrate_verifier.run(pairs=pairs, settings=settings, verifier=verifier, top_k=verifier_top_k, swaps=swaps,
                               cached_only=cached_only, target=target_false_match, registry=registry,
                               json_out=json_out)
        return
    try:
        if matcher == "hybrid":
            calibrate_hybrid.run(pairs=pairs, target=target_false_match, registry=registry, report=report,
                                 settings=settings, model=model, json_out=json_out)
            return
        embedder = load_embedder(model or settings.index.model, settings)
        if len(pairs) != 1:
            fail("--matcher dense takes one --pairs file")
        ideas = pool_by_id(read_labelled(pairs[0], require_paper=True))
        with progress_bars(not json_out) as bars:
            result = cal.calibrate_dense(ideas, embedder=embedder, settings=settings,
                                         top_k=top_k or settings.matcher.top_k,
                                         target_precision=target_precision, paper_text=paper_text, start=start,
                                         end=end, step=step, null=null, null_sample=null_sample, thetas=theta,
                                         progress=bars)
    except LookupError as exc:
        fail(str(exc), 1)
    except ValueError as exc:
        fail(str(exc))
    report_out = {**result.report, "pairs_file": str(pairs[0])}
    if csv_out:
        cal.write_curve_csv(csv_out, report_out["curve"])
    if plot:
        cal.plot_curve(plot, result, f"{embedder.key} ({embedder.revision}): {report_out['counts']['ideas_used']} "
                                     f"ideas, top-{report_out['top_k']}, target precision {target_precision}")
    if write:
        if result.pick is None:
            fail(f"no theta reaches precision {target_precision}; nothing written", 1)
        path = registry or user_registry(settings.home)
        entry = cal.theta_entry(result, pairs_file=pairs[0].name)
        write_entry(path, embedder.key, entry)
        report_out["written"] = {"registry": str(path), **entry}
    if json_out:
        print_json(report_out)
        return
    _print_calibration(report_out, result.pick)


def _print_calibration(report: dict, pick: cal.CurvePoint | None) -> None:
    c = report["counts"]
    console.print(f"{report['model']} ({report['revision']}): {c['ideas_used']} ideas, {c['positives']} positives, "
                  f"{c['papers']} papers, top-{report['top_k']}; {c['unresolved_paper_ids']} paper ids not in the "
                  f"corpus", highlight=False)
    table = Table("theta", "precision", "recall", "F1", "ideas matched", "tp", "fp", "fn",
                  title=f"matched = cosine >= theta (target precision {report['target_precision']})")
    marks = {round(x, 6) for x in np.arange(0.3, 1.0001, 0.05).round(2)}
    marks |= {p["theta"] for p in report["at_thetas"]} | ({pick.theta} if pick else set())
    for p in report["curve"]:
        if p["theta"] in marks:
            style = "bold green" if pick and p["theta"] == pick.theta else None
            table.add_row(f"{p['theta']:.2f}", f"{p['precision']:.3f}", f"{p['recall']:.3f}", f"{p['f1']:.3f}",
                          f"{p['ideas_matched']:.3f}", str(p["tp"]), str(p["fp"]), str(p["fn"]), style=style)
    console.print(table)
    if pick:
        console.print(f"picked theta {pick.theta:.2f}: precision {pick.precision:.3f}, recall "
                      f"{pick.recall:.3f} (current theta {report['current_theta']}); exact pick over all cosines "
                      f"{report['exact']['theta']:.4f}, average precision {report['exact']['average_precision']:.3f}")
    else:
        console.print(f"no theta reaches precision {report['target_precision']}", style="bold red")
    if "null" in report:
        n = report["null"]
        q = n["quantiles"]
        console.print(f"null ({n['n_pairs']:,} random idea-paper pairs): median {q['median']:.3f}, p99 {q['p99']:.3f}, "
                      f"p99.9 {q['p99.9']:.3f}; " + ", ".join(f"theta {t} at percentile {v:.3f}"
                                                             for t, v in n["theta_percentiles"].items()),
                      highlight=False)
    if "written" in report:
        console.print(f"wrote theta {report['written']['theta']} for {report['model']} to "
                      f"{report['written']['registry']};"
                      " it takes effect at the next `hindsight index build`", highlight=False)


def evaluate(ideas_file: Path = typer.Option(..., "--ideas", exists=True, dir_okay=False,
                                             help="JSONL/JSON/CSV of {id, text | problem+method, source?}."),
             top_k: int = typer.Option(None, help="Papers retrieved per idea (default HINDSIGHT_TOP_K, 20)."),
             resamples: int = typer.Option(2000, min=100, help="Bootstrap resamples (labelled ideas, per kind)."),
             swaps: bool = typer.Option(False, "--swaps", help="Add a method swap per realised idea (labelled ideas)."),
             verifier: str = typer.Option("none", help="auto, local, openai or none: add the hybrid matcher verified "
                                                       "(labelled ideas), per kind, field and style."),
             verifier_top_k: int = typer.Option(None, "--verifier-top-k", min=1, max=50,
                                                help="Candidates per idea the verifier reads (default 5)."),
             json_out: bool = JsonOpt) -> None:
    """Retrieval quality of the current index: recall@1/5/20 of named sources, match and false-match rates; for
    ideas labelled with a `kind`, per kind for hybrid, dense-only and BM25-only with bootstrap intervals."""
    settings = ready_settings()

    try:
        ideas = read_labelled(ideas_file)
        loaded, embedder = current_index(settings)
        k = top_k or settings.matcher.top_k
        if any(i.kind for i in ideas):
            step = verifier_step(verifier, settings, verifier_top_k,
                                 matcher_version=matcher_version_of(loaded, "hybrid"))
            with progress_bars(not json_out and step is not None) as bars:
                report = evaluate_kinds(with_swaps(ideas) if swaps else ideas, loaded=loaded, embedder=embedder,
                                        top_k=k, resamples=resamples, verifier=step, progress=bars)
        else:
            with progress_bars(not json_out) as bars:
                report = evaluate_sources(pool_by_id(ideas), loaded=loaded, embedder=embedder, top_k=k,
                                          batch_size=settings.index.batch_size, progress=bars)
    except VerifierUnavailable as exc:
        fail(f"--verifier: {exc}", 1)
    except (LookupError, MatcherUnavailable) as exc:
        fail(f"{exc}" + (" (evaluate by kind compares the hybrid matcher with dense-only and BM25-only)"
                         if isinstance(exc, MatcherUnavailable) else ""), 1)
    except ValueError as exc:
        fail(str(exc))
    report = {**report, "ideas_file": str(ideas_file)}
    if json_out:
        print_json(report)
    elif "by_kind" in report:
        print_kinds(report)
    else:
        print_sources(report)


def print_sources(report: dict) -> None:
    table = Table("measure", "value", title=f"index {report['index_version']} ({report['model']}, theta "
                  f"{report['theta']}, top-{report['top_k']})")
    for key, value in report.items():
        if key in ("source_not_indexed_examples", "ideas_file"):
            continue
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    console.print(table)
    if report["source_not_indexed"]:
        console.print(f"{report['source_not_indexed']} ideas name a source that is not in this index (outside the "
                      "window or "
                      "not ingested); they are left out of every rate above", highlight=False)
