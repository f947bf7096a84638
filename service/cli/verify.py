"""`hindsight verify`: a stored run's top candidates read by the verifier, after the fact."""

import typer

from indexing.matcher.verifier import VerifierUnavailable, make_verifier, registries, rule_for
from service.cli.common import (
    JsonOpt, console, fail, print_json, progress_bars, ready_settings, runs_option, stage_bar,
)
from service.verify import verify_run


def verify(run: str = typer.Option(..., "--run", help="Run id, or label (every system's run with it, or one with "
                                                       "--system)."),
           system: str | None = typer.Option(None, help="Only this system's run of the label."),
           top: int | None = typer.Option(None, "--top", min=1, max=50,
                                          help="Candidates per idea to read (default HINDSIGHT_VERIFIER_TOP_K, 5)."),
           verifier: str = typer.Option("auto", help="auto (local where installed), local or openai."),
           json_out: bool = JsonOpt) -> None:
    """Verify a stored run: its stored decisions and scores become the verified ones (the embedding-only ones are
    kept beside them). Every verdict is cached, so a killed run resumes and a second run makes no new calls."""
    settings = ready_settings()
    top_k = top or settings.matcher.verifier_top_k
    ids = runs_option(run, system)
    try:
        found = make_verifier(verifier, settings)
    except VerifierUnavailable as exc:
        fail(str(exc))
    if found is None:
        fail("no verifier is installed: pip install -e '.[verifier]' for the local one, or set "
             "HINDSIGHT_VERIFIER_URL and HINDSIGHT_VERIFIER_MODEL and pass --verifier openai")
    reports = []
    with progress_bars(not json_out) as bars:
        for run_id in ids:
            reports.append(verify_run(
                settings.db_path, run_id, verifier=found, top_k=top_k,
                rules=lambda version: rule_for(found.revision, version, registries(settings)),
                progress=stage_bar(bars, f"run {run_id}")))
            if reports[-1].stopped:
                break
    if json_out:
        print_json(reports[0].as_dict() if len(reports) == 1 else {"runs": [r.as_dict() for r in reports]})
    else:
        for report in reports:
            console.print(f"run {report.run_id}: verified {report.verified} of {report.ideas} ideas with "
                          f"{report.verifier} (top {top_k}); {report.new_calls} pairs read now, {report.cached} from "
                          f"the cache; ideas realised {report.realised_before} -> {report.realised_after}, with a "
                          f"direction match {report.direction_after}", highlight=False)
    report = reports[-1]
    if report.stopped:
        why = report.stopped if "resume" in report.stopped else f"{report.stopped}; rerun to resume"
        fail(f"stopped in run {report.run_id} after {report.verified} ideas ({report.left} left): {why}", 3)
