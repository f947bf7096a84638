"""The `hindsight` command line.

Its commands are listed here and imported when they run (lazy.py): `hindsight --help` imports none of them.
"""

import typer

from service.cli.lazy import Lazy, LazyGroup


class Commands(LazyGroup):
    table = {
        "ingest": Lazy("service.cli.papers:ingest",
                       "Validate and upsert paper files into the store, one transaction per file."),
        "score": Lazy("service.cli.score:score",
                      "Score ideas as a generator wrote them (HindSight JSONL, AI-Researcher plans, AI-Scientist "
                      "ideas.json) against the current index and store them under the run; AI-Scientist's own "
                      "ratings become judge `ai-scientist-self`."),
        "serve": Lazy("service.cli.serve:serve", "Run the HTTP API (like uvicorn); docs at /docs."),
        "calibrate": Lazy("service.cli.calibrate:calibrate", "Pick the match threshold for a model from positive "
                                                             "(idea, paper) pairs, or fit the hybrid matcher."),
        "evaluate": Lazy("service.cli.calibrate:evaluate",
                         "Retrieval quality of the current index: recall@1/5/20 of named sources, match and "
                         "false-match rates; for ideas labelled with a `kind`, per kind for hybrid, dense-only and "
                         "BM25-only with bootstrap intervals."),
        "verify": Lazy("service.cli.verify:verify",
                       "Verify a stored run: its stored decisions and scores become the verified ones (the "
                       "embedding-only ones are kept beside them). Every verdict is cached, so a killed run resumes "
                       "and a second run makes no new calls."),
        "index": Lazy("service.cli.index:app", "Build, inspect and publish index versions."),
        "judge": Lazy("service.cli.judge:app", "LLM-judge scores of stored ideas."),
        "fetch": Lazy("service.cli.fetch:app", "Fetch a corpus from OpenAlex or Semantic Scholar (resumable)."),
        "refresh": Lazy("service.cli.fetch:refresh_app", "Refresh what ages: citation counts."),
        "analyze": Lazy("service.cli.analyze:app", "Analyses of stored scores against LLM-judge scores."),
        "report": Lazy("service.cli.report:report",
                       "Write the evaluation of runs as one file to share: provenance, systems with intervals and "
                       "their comparison, prior-art classes, quadrants and correlations against the judge, score "
                       "distributions, estimates from labels."),
        "system": Lazy("service.cli.system:app", "Idea generators and their declared knowledge cutoffs."),
        "label": Lazy("service.cli.label:app", "Label a random draw of a run's ideas; import and export labels."),
        "metrics": Lazy("service.cli.metrics:app",
                        "Metrics of neighbouring benchmarks (InnoEval, SIQA, ReviewMT, novelty audit)."),
    }


app = typer.Typer(cls=Commands, help="HindSight: judge research-idea generators by the future.", no_args_is_help=True,
                  pretty_exceptions_show_locals=False)


@app.callback()
def _root() -> None:
    """HindSight: judge research-idea generators by the future."""


def main() -> None:
    app()
