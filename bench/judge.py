"""The LLM judge on real generator output: the 213 AI-Researcher ideas judged by the packaged model, beside the
embedding-only scoring of the same ideas measured in the same run.

    .venv/bin/python bench/judge.py [--ideas 213] [--prompt paper-v1 --prompt reviewers-v1] [--json OUT]

A fresh HINDSIGHT_HOME gets COLING 2025 (848 papers) and an index built at the ideas' cutoff (2024-05-31); the ideas
are scored and stored as one run (the baseline: embedding-only scoring, timed), then the run is judged with the
local judge (the packaged Qwen2.5-Coder-1.5B, or HINDSIGHT_VERIFIER_MODEL_PATH) under the first prompt version
(timed against the goal: 213 ideas in <= 20 minutes), then under each further version (timed on its own), and
judged again (the second run must make no call). Reported: wall time of each step, tokens evaluated, invalid answers
per dimension, the audit of the two prompt versions at the cut beside an independent count of flips from the
exported scores, and the quadrant and correlation analyses run with each judge by name. The machine's load
average is printed with the figures: the machine may be shared.
"""

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import corpus  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "generators"
PLANS = SHARED / "ai-researcher" / "experiment_plans"
CORPUS = corpus.COLING
CUTOFF = date(2024, 5, 31)
GOAL_MINUTES = 20.0


def independent_flips(a_rows: list[dict], b_rows: list[dict], dim: str, cut: float) -> tuple[int, int]:
    """(flips, compared) counted from two exported files' rows, by idea id: not the audit's code."""
    a: dict[str, float] = {r["idea_id"]: float(r[dim]) for r in a_rows if r.get(dim) is not None}
    b: dict[str, float] = {r["idea_id"]: float(r[dim]) for r in b_rows if r.get(dim) is not None}
    both = [i for i in a if i in b]
    return sum((a[i] >= cut) != (b[i] >= cut) for i in both), len(both)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ideas", type=int, default=213)
    parser.add_argument("--prompt", action="append", dest="prompts")
    parser.add_argument("--threads", type=int, default=None,
                        help="llama.cpp threads (HINDSIGHT_VERIFIER_THREADS; 0 = one per core). On a loaded 2-core "
                             "machine one thread measured faster than two (their spin-waits collide).")
    parser.add_argument("--json", type=Path, dest="json_out")
    args = parser.parse_args()
    if not PLANS.is_dir() or not CORPUS.exists():
        raise SystemExit(f"{PLANS} or {CORPUS} is missing (the shared generator outputs)")

    from indexing.db import session_scope
    from indexing.settings import Settings
    from service.analyses import Selection, correlations, quadrants
    from service.scoring.flow import score_run
    from service.ideas import read_path
    from service.llm_judge import prompts
    from service.llm_judge.audit import audit
    from service.llm_judge.backends import LocalJudge
    from service.llm_judge.pointwise import export_rows, judge_runs

    versions = [prompts.get(name) for name in (args.prompts or ["paper-v1", "reviewers-v1"])]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(os.environ.get("HINDSIGHT_HOME") or Path(tmp) / "home")
        settings = Settings(home=home, **({} if args.threads is None else {"llm": {"verifier_threads": args.threads}}))
        loaded, embedder = corpus.coling_index(settings, CUTOFF)
        read = read_path(PLANS, "ai-researcher")
        read = dataclasses.replace(read, ideas=read.ideas[:args.ideas])
        label = f"bench-{int(time.time())}"
        started = time.perf_counter()
        scored = score_run(settings, loaded=loaded, embedder=embedder, read=read, system="ai-researcher", run=label)
        score_s = time.perf_counter() - started
        print(f"embedding-only scoring of {len(read.ideas)} ideas: {score_s:.1f} s", file=sys.stderr, flush=True)

        started = time.perf_counter()
        judge = LocalJudge.from_settings(settings)
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        t0 = started

        def progress(done: int, total: int) -> None:
            if done % 10 == 0 or done == total:
                print(f"judged {done}/{total} ideas in {time.perf_counter() - t0:.0f} s (load average "
                      f"{os.getloadavg()[0]:.2f})", file=sys.stderr, flush=True)

        # the goal is one judge (the first version) over the ideas; each further version is timed on its own
        first = judge_runs(settings.db_path, scored.run_id, judge=judge, versions=versions[:1], progress=progress)
        judge_s = time.perf_counter() - started
        tokens = judge.tokens_evaluated
        further_s = []
        for version in versions[1:]:
            started = time.perf_counter()
            first += judge_runs(settings.db_path, scored.run_id, judge=judge, versions=[version])
            further_s.append(round(time.perf_counter() - started, 1))
        started = time.perf_counter()
        second = judge_runs(settings.db_path, scored.run_id, judge=judge, versions=versions)
        second_s = time.perf_counter() - started

        cut = settings.llm.judge_cut
        names = [r.judge for r in first]
        with session_scope(settings.db_path) as session:
            exported = {name: export_rows(session, run_id=scored.run_id, judge=name)[0] for name in names}
            audited = audit(session, judges=names[:2], runs=[scored.run_id], cut=cut) if len(names) > 1 else None
            selection = Selection(runs=(scored.run_id,))
            analyses = {}
            for name in names:
                q = quadrants(session, selection=selection, judge=name, dimension="overall", page_size=1)
                c = correlations(session, selection=selection, judge=name)
                analyses[name] = {
                    "quadrant_counts": {k: v["count"] for k, v in q["counts"][-1].items() if isinstance(v, dict)},
                    "judge_cut": q["cuts"]["judge"] if "cuts" in q else None,
                    "spearman_novelty": next((row["rho"] for row in c["rows"] if row["scope"] == "all"
                                              and row["dimension"] == "novelty"), None)}
    load_after = os.getloadavg()

    report: dict = {
        "ideas": len(read.ideas), "prompts": [v.name for v in versions], "judges": names,
        "threads": settings.llm.verifier_threads,
        "revisions": [r.revision for r in first],
        "embedding_only_scoring_s": round(score_s, 1), "judge_load_s": round(load_s, 1),
        "judge_s": round(judge_s, 1), "judge_minutes": round(judge_s / 60, 2),
        "judge_over_embedding_only": round(judge_s / score_s, 1), "further_versions_s": further_s,
        "seconds_per_idea": round(judge_s / max(1, len(read.ideas)), 2),
        "tokens_evaluated": tokens, "tokens_per_idea": round(tokens / max(1, len(read.ideas))),
        "new_calls": [r.new_calls for r in first], "invalid": {r.judge: r.invalid for r in first},
        "sources": {r.judge: r.sources for r in first},
        "second_run": {"new_calls": [r.new_calls for r in second], "cached": [r.cached for r in second],
                       "seconds": round(second_s, 2)},
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
        "analyses": analyses,
    }
    if audited is not None:
        report["audit"] = {"cut": cut, "dimensions": {}}
        for dim, block in audited["dimensions"].items():
            flips, compared = independent_flips(exported[names[0]], exported[names[1]], dim, cut)
            report["audit"]["dimensions"][dim] = {
                "flips": block["flips"], "n_compared": block["n_compared"], "flip_rate": block["flip_rate"],
                "independent_flips": flips, "independent_compared": compared,
                "spearman": block["spearman"], "kendall": block["kendall"], "mean_shift": block["mean_shift"],
                "invalid": block["invalid"]}
    print(json.dumps(report, indent=2))
    minutes = judge_s / 60 * (213 / max(1, len(read.ideas)))
    print(f"goal: 213 ideas in <= {GOAL_MINUTES:.0f} min under one judge ({versions[0].name}): "
          f"{minutes:.1f} min ({'met' if minutes <= GOAL_MINUTES else 'missed'}); second run new calls: "
          f"{sum(r.new_calls for r in second)}")
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
