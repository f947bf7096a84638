"""`hindsight verify`: a stored run's top candidates read by the verifier, after the fact."""

import typer

from indexing.matcher.verifier import VerifierUnavailable, make_verifier, registries, rule_for
from service.cli.common import JsonOpt, console, fail, print_json, progress_bars, ready_settings
from service.runs import RunNotFound
from service.verify import run_id_of, verify_run


def verify(run: str = typer.Option(..., "--run", help="Run id, or label (with --system when ambiguous)."),
           system: str | None = typer.Option(None, help="The run's system, when its label is ambiguous."),
           top: int | None = typer.Option(None, "--top", min=1, max=50,
                                          help="Candidates per idea to read (default HINDSIGHT_VERIFIER_TOP_K, 5)."),
           verifier: str = typer.Option("auto", help="auto (local where installed), local or openai."),
           json_out: bool = JsonOpt) -> None:
    """Verify a stored run: its stored decisions and scores become the verified ones (the embedding-only ones are
    kept beside them). Every verdict is cached, so a killed run resumes and a second run makes no new calls."""
    settings = ready_settings()
    top_k = top or settings.verifier_top_k
    try:
        run_id = run_id_of(settings.db_path, run, system)
        found = make_verifier(verifier, settings)
    except RunNotFound as exc:
        fail(str(exc))
    except VerifierUnavailable as exc:
        fail(str(exc))
    if found is None:
        fail("no verifier is installed: pip install -e '.[verifier]' for the local one, or set "
             "HINDSIGHT_VERIFIER_URL and HINDSIGHT_VERIFIER_MODEL and pass --verifier openai")
    with progress_bars(not json_out) as bars:
        report = verify_run(settings.db_path, run_id, verifier=found, top_k=top_k,
                            rules=lambda version: rule_for(found.revision, version, registries(settings)),
                            progress=(lambda done, total: bars("verify", 1, total)) if bars else None)
    out = report.as_dict()
    if json_out:
        print_json(out)
    else:
        console.print(f"run {run_id}: verified {report.verified} of {report.ideas} ideas with {report.verifier} "
                      f"(top {top_k}); {report.new_calls} pairs read now, {report.cached} from the cache; "
                      f"ideas realised {report.realised_before} -> {report.realised_after}, "
                      f"with a direction match {report.direction_after}", highlight=False)
    if report.stopped:
        why = report.stopped if "resume" in report.stopped else f"{report.stopped}; rerun to resume"
        fail(f"stopped after {report.verified} ideas ({report.left} left): {why}", 3)
