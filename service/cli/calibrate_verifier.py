"""`hindsight calibrate --verifier V`: read labelled ideas' top candidates with the verifier, fit the rule that
combines its answers with the hybrid matcher's (indexing.matcher.verifier.fit), print the out-of-fold figures and
write the fit to the registry."""

from datetime import date
from pathlib import Path

from rich.table import Table

from indexing.matcher.calibrate import assign_folds, venue_family
from indexing.matcher.corpus import matcher_version_of
from indexing.matcher.evaluate import METRICS, with_swaps
from indexing.matcher.labelled import LabelledIdea, read_labelled
from indexing.matcher.verifier import VerifierUnavailable, registries, verifier_step
from indexing.matcher.verifier.fit import fit_rule, read_labelled_ideas, report
from indexing.matcher.verifier.rule import fit_key, write_fit
from indexing.settings import Settings
from service.cli.common import console, current_index, fail, print_json, progress_bars


def labelled(pairs: list[Path], swaps: bool) -> list[LabelledIdea]:
    """The labelled ideas of every file, vague ones spread over the fields (as the hybrid fit does)."""
    ideas = [i for p in pairs for i in read_labelled(p)]
    for idea, fold in zip(ideas, assign_folds([i.fold or venue_family(i.venue) for i in ideas])):
        idea.fold = fold
    return with_swaps(ideas) if swaps else ideas


def run(*, pairs: list[Path], settings: Settings, verifier: str, top_k: int | None, swaps: bool, cached_only: bool,
        target: float, registry: Path | None, json_out: bool) -> None:
    loaded, embedder = current_index(settings)
    version = matcher_version_of(loaded, "hybrid")
    try:
        step = verifier_step(verifier, settings, top_k, matcher_version=version)
    except VerifierUnavailable as exc:
        fail(f"--verifier: {exc}", 1)
    if step is None:
        fail("--verifier: no verifier to calibrate (none, or auto with none installed)")
    ideas = labelled(pairs, swaps)
    with progress_bars(not json_out) as bars:
        reads, skipped = read_labelled_ideas(ideas, loaded=loaded, embedder=embedder, step=step,
                                             cached_only=cached_only, progress=bars)
    if not reads:
        fail("no labelled idea was read (with --cached-only: none has all its pairs in the cache)", 1)
    revision = step.verifier.revision
    rule = fit_rule(reads, target, version=f"verifier-fit-{date.today():%Y%m%d}")
    out = {"verifier": revision, "matcher_version": version, "top_k": step.top_k, "ideas": len(ideas),
           "left_out_not_cached": skipped, **report(reads, target), "rule": rule.as_dict()}
    path = registry or registries(settings)[0]
    write_fit(path, revision, version, {**rule.as_dict(), "top_k": step.top_k, "ideas": len(reads),
                                        "fields": sorted({r.field for r in reads})})
    out["registry"] = str(path)
    if json_out:
        print_json(out)
        return
    table = Table("kind", *METRICS[2:], "uncalibrated any realised",
                  title=f"{revision} over {version} top {step.top_k}: nested leave-one-field-out, {len(reads)} ideas")
    for kind, summary in out["by_kind"].items():
        raw = out["uncalibrated_by_kind"].get(kind, {}).get("any_realised")
        table.add_row(kind, *(f"{summary[m]['value']:.2f} (n={summary[m]['n']})" if m in summary else "-"
                              for m in METRICS[2:]), f"{raw['value']:.2f}" if raw else "-")
    console.print(table)
    console.print(f"fit written to {path} as {fit_key(revision, version)}; thresholds {rule.thresholds()}",
                  highlight=False)
