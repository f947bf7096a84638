"""`hindsight calibrate --matcher hybrid`: fit the realised / direction models (indexing.matcher.fitting), write
the report, print the out-of-fold figures."""

from pathlib import Path

from rich.table import Table

from indexing.embedders import load_embedder
from indexing.matcher.fitting import fit_hybrid
from indexing.matcher.model import SHAPES
from indexing.matcher.report import fmt, write_report
from indexing.settings import Settings
from service.cli.common import console, fail, print_json, progress_bars


def run(*, pairs: list[Path], target: float, registry: Path | None, report: Path | None, settings: Settings,
        model: str | None, json_out: bool) -> None:
    embedder = load_embedder(model or settings.index.model, settings)
    with progress_bars(not json_out) as bars:
        try:
            result = fit_hybrid(pairs=pairs, settings=settings, embedder=embedder, target=target, registry=registry,
                                report=report, progress=bars)
        except LookupError as exc:
            fail(str(exc), 1)
    result.pop("stacks")
    if report:
        write_report(report, result)
    if json_out:
        oof = {s: {k: v for k, v in o.items() if k != "curves"} for s, o in result["out_of_fold"].items()}
        print_json({k: v for k, v in result.items() if k != "out_of_fold"} | {"out_of_fold": oof})
        return
    print_summary(result)


def print_summary(result: dict) -> None:
    e = result["entry"]
    console.print(f"fitted {e['version']} for {e['model']} ({e['revision']}) on {e['ideas']} ideas over "
                  f"{e['papers']} papers; written to {result['registry']}", highlight=False)
    for shape in SHAPES:
        table = Table("kind", "measure", "hybrid", "dense-only", "BM25-only",
                      title=f"{shape} ideas, out-of-fold (leave one venue family out)")
        o = result["out_of_fold"][shape]
        for kind, summary in o["hybrid"].items():
            for m in ("recall@1", "source_realised", "any_realised", "source_direction", "any_direction"):
                if m not in summary:
                    continue
                cells = [fmt(summary[m])] + [fmt(o[b][kind][m]) if b in o and kind in o[b] and m in o[b][kind]
                                             else "-" for b in ("dense", "bm25")]
                table.add_row(kind, m, *cells)
        console.print(table)
    t = result["idea_theta"]
    console.print(f"MiniLM dense theta on idea-shaped pairs: {t['theta']} (target false-match {t['target_false_match']}"
                  f"; precision-0.9 pick {t['precision_0.9']['theta'] if t['precision_0.9'] else 'none'}) vs the "
                  f"title-based {e['baselines']['dense_theta']}", highlight=False)
