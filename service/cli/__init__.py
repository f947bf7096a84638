"""The `hindsight` command line."""

import typer

from service.cli import calibrate, fetch, index, papers, scoring
from service.cli import metrics as metrics_cli
from service.cli import analyze, judge, system, verify
from service.cli import label as label_cli

app = typer.Typer(help="HindSight: judge research-idea generators by the future.", no_args_is_help=True,
                  pretty_exceptions_show_locals=False)
app.command()(papers.ingest)
app.command()(scoring.score)
app.command()(scoring.serve)
app.command()(calibrate.calibrate)
app.command()(calibrate.evaluate)
app.command()(verify.verify)
app.add_typer(index.app, name="index")
app.add_typer(judge.app, name="judge")
app.add_typer(fetch.app, name="fetch")
app.add_typer(fetch.refresh_app, name="refresh")
app.add_typer(analyze.app, name="analyze")
app.add_typer(system.app, name="system")
app.add_typer(label_cli.app, name="label")
app.add_typer(metrics_cli.app, name="metrics",
              help="Metrics of neighbouring benchmarks (InnoEval, SIQA, ReviewMT, novelty audit).")


def main() -> None:
    app()
