"""Printing `hindsight evaluate` for labelled ideas (a `kind` per idea): per kind, hybrid vs dense-only vs BM25-only
(computed by indexing.matcher.evaluate.evaluate_kinds)."""

from rich.table import Table

from indexing.matcher.evaluate import METHODS, METRICS
from service.cli.common import console


def print_kinds(report: dict) -> None:
    table = Table("kind", "measure", *METHODS, title=f"index {report['index_version']} ({report['model']}), matcher "
                  f"{report['matcher_version']}, top-{report['top_k']}; rates with 95% bootstrap intervals")
    for kind, summary in report["by_kind"]["hybrid"].items():
        for metric in METRICS:
            if metric not in summary:
                continue
            cells = []
            for m in METHODS:
                iv = report["by_kind"][m].get(kind, {}).get(metric)
                cells.append("-" if not iv or iv["value"] is None else
                             f"{iv['value']:.3f} [{iv['low']:.2f}, {iv['high']:.2f}] n={iv['n']}")
            table.add_row(kind, metric, *cells)
    console.print(table)
    if report["source_not_indexed"]:
        console.print(f"{report['source_not_indexed']} ideas name a source outside index {report['index_version']}; "
                      "left out of every rate above", highlight=False)
