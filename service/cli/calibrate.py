"""`hindsight calibrate` (threshold from positive pairs, null distribution) and `hindsight evaluate`."""

import csv
import json
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import numpy as np
import typer
from rich.table import Table
from sqlalchemy import select

from indexing import calibration as cal
from indexing.build import embed_with_cache
from indexing.db import session_scope
from indexing.embedders import join, load_embedder
from indexing.embedders.thetas import SHIPPED, user_registry, write_entry
from indexing.models import Paper
from indexing.vectorindex.faiss_index import FaissIndex
from service.cli.common import (
    JsonOpt, console, current_index, fail, print_json, progress_bars, ready_settings,
)

IDEA_FIELDS = ("problem", "method", "text", "idea")


@dataclass
class LabelledIdea:
    id: str
    problem: str | None
    method: str | None
    text: str | None
    papers: list[str]  # positives (calibrate) or the named source (evaluate); empty = none
    line: int

    def input_text(self, embedder) -> str:
        return self.text.strip() if self.text else join(embedder, self.problem or "", self.method)


def read_records(path: Path) -> list[tuple[int, dict]]:
    """(line or row number, record) from JSONL, a JSON array, or CSV with a header."""
    raw = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        return [(n, dict(r)) for n, r in enumerate(csv.DictReader(raw.splitlines()), start=2)]
    stripped = raw.lstrip()
    if stripped.startswith("["):
        try:
            return [(n, r) for n, r in enumerate(json.loads(raw), start=1)]
        except ValueError as exc:
            fail(f"{path}: not valid JSON ({exc})")
    out = []
    for n, line in enumerate(raw.splitlines(), start=1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except ValueError as exc:
                fail(f"{path}:{n}: not valid JSON ({exc})")
    return out


def read_labelled(path: Path, *, paper_fields: tuple[str, ...], require_paper: bool) -> list[LabelledIdea]:
    """Ideas with their paper ids; rows sharing an id (or, without ids, the same text) pool their papers."""
    ideas: dict[str, LabelledIdea] = {}
    for n, rec in read_records(path):
        if not isinstance(rec, dict):
            fail(f"{path}:{n}: each record must be an object")
        text = rec.get("text") or rec.get("idea")
        problem, method = rec.get("problem"), rec.get("method")
        if not any(isinstance(v, str) and v.strip() for v in (text, problem, method)):
            fail(f"{path}:{n}: field 'text': an idea needs 'text' (or 'idea') or 'problem' + 'method'")
        papers: list[str] = []
        for field in paper_fields:
            value = rec.get(field)
            if isinstance(value, list):
                papers += [str(v) for v in value if v not in (None, "")]
            elif value not in (None, ""):
                papers.append(str(value))
        if require_paper and not papers:
            fail(f"{path}:{n}: field '{paper_fields[0]}': a positive pair needs the paper id of its paper")
        key = str(rec.get("id") or text or f"{problem}\x1f{method}")
        if key in ideas:
            ideas[key].papers += [p for p in papers if p not in ideas[key].papers]
        else:
            ideas[key] = LabelledIdea(id=str(rec.get("id") or f"line{n}"), problem=problem, method=method,
                                      text=text, papers=papers, line=n)
    if not ideas:
        fail(f"{path}: no ideas")
    return list(ideas.values())


def _date(value: str | None) -> date | None:
    return datetime.strptime(value, "%Y-%m-%d").date() if value else None


def _plot(path: Path, curve: list[cal.CurvePoint], pick: cal.CurvePoint | None, null: np.ndarray | None,
          title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 2 if null is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.2), squeeze=False)
    ax = axes[0][0]
    t = [p.theta for p in curve]
    ax.plot(t, [p.precision for p in curve], label="precision")
    ax.plot(t, [p.recall for p in curve], label="recall")
    ax.plot(t, [p.f1 for p in curve], label="F1", linestyle="--")
    if pick:
        ax.axvline(pick.theta, color="grey", linestyle=":", label=f"picked theta {pick.theta:.2f}")
    ax.set_xlabel("theta (cosine)")
    ax.set_ylim(0, 1.02)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    if null is not None:
        ax2 = axes[0][1]
        ax2.hist(null, bins=100, density=True, color="tab:grey", alpha=0.8)
        if pick:
            ax2.axvline(pick.theta, color="tab:red", linestyle=":",
                        label=f"theta {pick.theta:.2f}: percentile {cal.null_percentile(null, pick.theta):.4f}")
            ax2.legend(fontsize=8)
        ax2.set_xlabel("cosine of random idea-paper pairs (null)")
        ax2.set_title(f"null distribution, {len(null):,} pairs", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def calibrate(pairs: Path = typer.Option(..., "--pairs", exists=True, dir_okay=False,
                                         help="Positive pairs: JSONL/JSON/CSV of {id, text | problem+method, "
                                              "paper_id | paper_ids}."),
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
              json_out: bool = JsonOpt) -> None:
    """Pick the match threshold for a model from positive (idea, paper) pairs, or fit the hybrid matcher."""
    settings = ready_settings()
    if matcher == "hybrid":
        from service.cli import calibrate_hybrid

        try:
            calibrate_hybrid.run(pairs=pairs, target=target_false_match, registry=registry, report=report,
                                 settings=settings, json_out=json_out, model=model)
        except ValueError as exc:
            fail(str(exc))
        return
    if matcher != "dense":
        fail(f"--matcher must be dense or hybrid, not {matcher!r}")
    if paper_text not in ("title+abstract", "abstract"):
        fail("--paper-text must be title+abstract or abstract")
    ideas = read_labelled(pairs, paper_fields=("paper_id", "paper_ids"), require_paper=True)
    try:
        embedder = load_embedder(model or settings.model, settings)
    except ValueError as exc:
        fail(str(exc))
    lo, hi = _date(cutoff), _date(until)
    with session_scope(settings.db_path) as session:
        query = select(Paper.paper_id, Paper.title, Paper.abstract).order_by(Paper.pk)
        if lo:
            query = query.where(Paper.publication_date >= lo)
        if hi:
            query = query.where(Paper.publication_date <= hi)
        rows = session.execute(query).all()
    if paper_text == "abstract":
        skipped_empty = sum(1 for r in rows if not (r.abstract or "").strip())
        rows = [r for r in rows if (r.abstract or "").strip()]
    else:
        skipped_empty = 0
    if not rows:
        fail("no papers in the database (in the date range): ingest the corpus first with `hindsight ingest`", 1)
    row_of = {r.paper_id: i for i, r in enumerate(rows)}
    unresolved = [(i.line, p) for i in ideas for p in i.papers if p not in row_of]
    usable = [i for i in ideas if any(p in row_of for p in i.papers)]
    if not usable:
        fail(f"none of the {len(ideas)} ideas names a paper in the corpus (e.g. line {unresolved[0][0]}: "
             f"{unresolved[0][1]!r}); check the paper ids against `hindsight ingest`ed papers", 1)
    texts = [r.abstract.strip() if paper_text == "abstract" else join(embedder, r.title, r.abstract) for r in rows]
    k = min(top_k or settings.top_k, len(rows))
    with progress_bars(not json_out) as bars:
        paper_vecs, embedded = embed_with_cache(embedder, texts, db_path=settings.db_path,
                                                batch_size=settings.batch_size, progress=bars)
        if bars:
            bars("ideas", 0, len(usable))
        idea_vecs = embedder.encode([i.input_text(embedder) for i in usable], batch_size=settings.batch_size,
                                    progress=(lambda n: bars("ideas", n, len(usable))) if bars else None)
    index = FaissIndex.create(embedder.dim, factory="IDMap2,Flat")
    index.add(paper_vecs, np.arange(len(rows), dtype=np.int64))
    sims, ids = index.search(idea_vecs, k)
    hits = [[(rows[j].paper_id, float(s)) for s, j in zip(srow, irow) if j >= 0] for srow, irow in zip(sims, ids)]
    positives = [{p for p in i.papers if p in row_of} for i in usable]
    curve = cal.pr_curve(positives, hits, cal.theta_grid(0.0, 1.0, step))
    pick = cal.pick_theta(curve, target_precision)
    exact = cal.exact_pick(positives, hits, target_precision)
    report: dict = {
        "model": embedder.key, "model_id": embedder.model_id, "revision": embedder.revision,
        "current_theta": embedder.theta, "target_precision": target_precision, "top_k": k,
        "paper_text": paper_text, "pairs_file": str(pairs),
        "counts": {"ideas": len(ideas), "ideas_used": len(usable), "positives": sum(map(len, positives)),
                   "unresolved_paper_ids": len(unresolved), "papers": len(rows),
                   "papers_skipped_empty_abstract": skipped_empty, "papers_embedded_now": embedded},
        "unresolved_examples": [{"line": n, "paper_id": p} for n, p in unresolved[:5]],
        "picked": pick.as_dict() if pick else None, "exact": exact,
        "at_thetas": [p.as_dict() for p in cal.pr_curve(positives, hits, sorted({embedder.theta, *theta}))],
        "curve": [p.as_dict() for p in curve],
    }
    null_cos = None
    if null:
        null_rows = [{row_of[p] for p in i.papers if p in row_of} for i in usable]
        null_cos = cal.null_cosines(idea_vecs, paper_vecs, null_rows, sample=null_sample)
        marks = sorted({embedder.theta, *theta, *([pick.theta] if pick else [])})
        report["null"] = cal.null_summary(null_cos, marks)
    if csv_out:
        csv_out.parent.mkdir(parents=True, exist_ok=True)
        with csv_out.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(report["curve"][0]))
            writer.writeheader()
            writer.writerows(report["curve"])
    if plot:
        _plot(plot, curve, pick, null_cos, f"{embedder.key} ({embedder.revision}): {len(usable)} ideas, top-{k}, "
                                           f"target precision {target_precision}")
    if write:
        if pick is None:
            fail(f"no theta reaches precision {target_precision}; nothing written", 1)
        path = registry or user_registry(settings.home)
        entry = {"theta": pick.theta, "model_id": embedder.model_id, "revision": embedder.revision,
                 "target_precision": target_precision, "precision": round(pick.precision, 4),
                 "recall": round(pick.recall, 4), "f1": round(pick.f1, 4), "pairs": len(usable), "top_k": k,
                 "paper_text": paper_text, "pairs_file": pairs.name}
        if null_cos is not None:
            entry["null_percentile"] = round(cal.null_percentile(null_cos, pick.theta), 4)
        write_entry(path, embedder.key, entry)
        report["written"] = {"registry": str(path), **entry}
    if json_out:
        print_json(report)
        return
    _print_calibration(report, pick)


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
        console.print(f"picked theta [bold]{pick.theta:.2f}[/]: precision {pick.precision:.3f}, recall "
                      f"{pick.recall:.3f} (current theta {report['current_theta']}); exact pick over all cosines "
                      f"{report['exact']['theta']:.4f}, average precision {report['exact']['average_precision']:.3f}")
    else:
        console.print(f"[bold red]no theta reaches precision {report['target_precision']}[/]")
    if "null" in report:
        n = report["null"]
        q = n["quantiles"]
        console.print(f"null ({n['n_pairs']:,} random idea-paper pairs): median {q['median']:.3f}, p99 {q['p99']:.3f}, "
                      f"p99.9 {q['p99.9']:.3f}; " + ", ".join(f"theta {t} at percentile {v:.3f}"
                                                             for t, v in n["theta_percentiles"].items()),
                      highlight=False)
    if "written" in report:
        console.print(f"wrote theta {report['written']['theta']} for {report['model']} to {report['written']['registry']};"
                      " it takes effect at the next `hindsight index build`", highlight=False)


def evaluate(ideas_file: Path = typer.Option(..., "--ideas", exists=True, dir_okay=False,
                                             help="JSONL/JSON/CSV of {id, text | problem+method, source?}."),
             top_k: int = typer.Option(None, help="Papers retrieved per idea (default HINDSIGHT_TOP_K, 20)."),
             resamples: int = typer.Option(2000, min=100, help="Bootstrap resamples (labelled ideas, per kind)."),
             json_out: bool = JsonOpt) -> None:
    """Retrieval quality of the current index: recall@1/5/20 of named sources, match and false-match rates; for
    ideas labelled with a `kind`, per kind for hybrid, dense-only and BM25-only with bootstrap intervals."""
    settings = ready_settings()
    records = read_records(ideas_file)
    from service.cli.evaluate_kinds import evaluate_kinds, has_kinds

    if has_kinds(records):
        loaded, embedder = current_index(settings)
        evaluate_kinds(ideas_file, records, loaded=loaded, embedder=embedder, top_k=top_k or settings.top_k,
                       resamples=resamples, json_out=json_out)
        return
    ideas = read_labelled(ideas_file, paper_fields=("source", "source_paper_id"), require_paper=False)
    loaded, embedder = current_index(settings)
    m = loaded.manifest
    indexed = {p["paper_id"] for p in loaded.papers.values()}
    not_indexed = [i for i in ideas if i.papers and not any(p in indexed for p in i.papers)]
    usable = [i for i in ideas if not i.papers or any(p in indexed for p in i.papers)]
    k = top_k or settings.top_k
    with progress_bars(not json_out) as bars:
        if bars:
            bars("ideas", 0, len(usable))
        vecs = embedder.encode([i.input_text(embedder) for i in usable], batch_size=settings.batch_size,
                               progress=(lambda n: bars("ideas", n, len(usable))) if bars else None)
    hits = [[(p["paper_id"], s) for p, s in row] for row in loaded.search(vecs, k)] if usable else []
    sources = [next((p for p in i.papers if p in indexed), None) for i in usable]
    report = {"index_version": loaded.version, "model": m["model"], "revision": m["revision"], "theta": m["theta"],
              "top_k": k, "ideas_file": str(ideas_file), "ideas_in_file": len(ideas),
              "source_not_indexed": len(not_indexed),
              "source_not_indexed_examples": [{"id": i.id, "source": i.papers[0]} for i in not_indexed[:5]],
              **cal.evaluate_retrieval(sources, hits, m["theta"], ks=sorted({1, 5, min(20, k), k}))}
    if json_out:
        print_json(report)
        return
    table = Table("measure", "value", title=f"index {loaded.version} ({m['model']}, theta {m['theta']}, top-{k})")
    for key, value in report.items():
        if key in ("source_not_indexed_examples", "ideas_file"):
            continue
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    console.print(table)
    if not_indexed:
        console.print(f"{len(not_indexed)} ideas name a source that is not in this index (outside the window or "
                      "not ingested); they are left out of every rate above", highlight=False)
