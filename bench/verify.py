"""The verifier's cost on real generator output: AI-Researcher's ideas scored against COLING 2025, then verified.

    .venv/bin/python bench/verify.py [--ideas 213] [--top 5]

Real commands in a fresh HINDSIGHT_HOME: `hindsight ingest` of COLING 2025 (848 papers), `hindsight index build`
at the ideas' cutoff (2024-05-31), `hindsight score` of the AI-Researcher experiment plans (the embedding-only
baseline, measured in the same run), then `hindsight verify --run` twice: the first reads each idea's top K
candidates with the verifier (HINDSIGHT_VERIFIER, default the packaged local model), the second must make no new
call (every verdict comes from the cache). With --ideas below 213, ideas are taken round-robin over the six topics
and the cost is projected to all 213. Goal: 213 ideas at K = 5 in <= 30 minutes on a 2-core machine.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "generators"
PLANS = SHARED / "ai-researcher" / "experiment_plans"
CORPUS = SHARED / "corpus" / "coling2025.json"
GOAL_MINUTES = 30.0
ALL_IDEAS = 213


def run(env: dict, *args: str) -> tuple[dict, float]:
    started = time.perf_counter()
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "hindsight"), *args, "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"hindsight {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout), seconds


def subset(n: int, into: Path) -> int:
    """Copy n idea files, round-robin over the topics, keeping the experiment_plans/TOPIC/NAME.json layout."""
    topics = {t.name: sorted(t.glob("*.json")) for t in sorted(PLANS.iterdir()) if t.is_dir()}
    picked = 0
    for i in range(max(len(v) for v in topics.values())):
        for name, files in topics.items():
            if picked < n and i < len(files):
                (into / name).mkdir(parents=True, exist_ok=True)
                shutil.copy(files[i], into / name / files[i].name)
                picked += 1
    return picked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ideas", type=int, default=ALL_IDEAS, help="AI-Researcher ideas to score and verify")
    parser.add_argument("--top", type=int, default=5, help="candidates per idea the verifier reads")
    args = parser.parse_args()
    if not PLANS.is_dir():
        raise SystemExit(f"{PLANS} is missing (the shared generator outputs)")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HINDSIGHT_HOME": str(Path(tmp) / "home")}
        plans = Path(tmp) / "experiment_plans"
        n = subset(args.ideas, plans)
        run(env, "ingest", str(CORPUS))
        build, build_s = run(env, "index", "build", "--cutoff", "2024-05-31", "--until", "2025-12-31")
        print(f"index {build['version']}: {build['manifest']['counts']['indexed']} papers, {build_s:.1f}s", flush=True)
        scored, score_s = run(env, "score", str(plans), "--system", "ai-researcher", "--run", "bench",
                              "--verifier", "none")
        print(f"baseline: hindsight score of {n} ideas, embedding only: {score_s:.1f}s", flush=True)
        first, first_s = run(env, "verify", "--run", str(scored["run_id"]), "--top", str(args.top))
        pairs = first["new_calls"]
        print(f"hindsight verify --top {args.top}: {first_s:.1f}s, {pairs} pairs read "
              f"({first_s / max(pairs, 1):.2f} s/pair incl. model load), {first['verifier']}; realised "
              f"{first['realised_before']} -> {first['realised_after']} ideas, direction {first['direction_after']}",
              flush=True)
        second, second_s = run(env, "verify", "--run", str(scored["run_id"]), "--top", str(args.top))
        print(f"second run: {second_s:.1f}s, {second['new_calls']} new calls, {second['cached']} from the cache",
              flush=True)
        projected = first_s / n * ALL_IDEAS / 60
        verdict = "met" if projected <= GOAL_MINUTES else "missed"
        print(f"ratio verify / score: {first_s / score_s:.1f}x; projected to {ALL_IDEAS} ideas at K={args.top}: "
              f"{projected:.1f} min (goal <= {GOAL_MINUTES:.0f} min: {verdict}); second run new calls: "
              f"{second['new_calls']} (goal 0)")
        sys.exit(0 if second["new_calls"] == 0 else 1)


if __name__ == "__main__":
    main()
