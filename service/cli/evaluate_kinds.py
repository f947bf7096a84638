"""Printing `hindsight evaluate` for labelled ideas (a `kind` per idea): per kind, hybrid vs dense-only vs BM25-only,
and the hybrid matcher verified when a verifier read the top candidates (computed by
indexing.matcher.evaluate.evaluate_kinds)."""

from rich.table import Table

from indexing.matcher.evaluate import METRICS
from service.cli.common import console


def _cell(iv: dict | None) -> str:
    if not iv or iv["value"] is None:
        return "-"
    return f"{iv['value']:.3f} [{iv['low']:.2f}, {iv['high']:.2f}] n={iv['n']}"


def print_kinds(report: dict) -> None:
    methods = list(report["by_kind"])
    verifier = report.get("verifier")
    table = Table("kind", "measure", *methods, title=f"index {report['index_version']} ({report['model']}), matcher "
                  f"{report['matcher_version']}, top-{report['top_k']}"
                  + (f", verified by {verifier['verifier']} (top {verifier['verifier_top_k']})" if verifier else "")
                  + "; rates with 95% bootstrap intervals")
    for kind, summary in report["by_kind"]["hybrid"].items():
        for metric in METRICS:
            if metric not in summary:
                continue
            table.add_row(kind, metric, *(_cell(report["by_kind"][m].get(kind, {}).get(metric)) for m in methods))
    console.print(table)
    for group, summaries in report.get("verified_by", {}).items():
        names = list(summaries)
        table = Table("kind", "measure", *names, title=f"verified, by {group}")
        kinds = dict.fromkeys(k for s in summaries.values() for k in s)
        for kind in kinds:
            for metric in METRICS:
                if any(metric in summaries[n].get(kind, {}) for n in names):
                    table.add_row(kind, metric, *(_cell(summaries[n].get(kind, {}).get(metric)) for n in names))
        console.print(table)
    if report["source_not_indexed"]:
        console.print(f"{report['source_not_indexed']} ideas name a source outside index {report['index_version']}; "
                      "left out of every rate above", highlight=False)
