"""`hindsight report` on the 213 AI-Researcher ideas, timed as a whole process, as a user runs it.

    .venv/bin/python bench/report.py --corpus coling2025.json --plans experiment_plans/ \
        [--labels data/labelled/ai_researcher_coling2025_air1.jsonl --labels ..._air2.jsonl] [--rounds 3] [--home DIR]

Set up, not timed, as docs/labels-example.md does: the corpus (COLING 2025, 848 papers) ingested, the index built
over 2024-05-31..2025-12-31, AI-Researcher's topic folders scored as two systems (air1: bias, coding, factuality;
air2: math, safety, uncertainty; run claude-2024-05), a judge's scores for every idea (`bench-judge`, drawn with a
fixed seed: AI-Researcher rates nothing, and the report's quadrant and correlation sections need a judge), the
labelled files imported and 30 ideas per system drawn. Then, round after round, `hindsight report --run
claude-2024-05 --judge bench-judge --labels` writes report.html and report.md, beside `hindsight analyze systems --run
claude-2024-05 --json` (one analysis, the yardstick measured in the same rounds). Prints each command's median and
slowest round, the report's ratio to the yardstick, the goal of 10 s, and the machine's load (`uptime`) before and
after.
"""

import argparse
import csv
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import hindsight  # noqa: E402
from startup import run as timed  # noqa: E402

GOAL_SECONDS = 10.0
RUN = "claude-2024-05"
SYSTEMS = {"air1": ("bias", "coding", "factuality"), "air2": ("math", "safety", "uncertainty")}


def run(env: dict[str, str], *args: str) -> float:
    """Seconds one `hindsight` command took; its stderr ends the bench when it fails."""
    return timed(hindsight(*args), env)


def judge_file(home: Path, path: Path, seed: int = 0) -> None:
    """A judge's scores (1-10, one decimal) for every stored idea, from a fixed seed."""
    rng = np.random.default_rng(seed)
    with sqlite3.connect(home / "hindsight.db") as con:
        ids = [r[0] for r in con.execute("SELECT idea_id FROM ideas ORDER BY pk")]
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["idea_id", "judge", "novelty", "feasibility", "impact", "overall"])
        for idea in ids:
            out.writerow([idea, "bench-judge", *(round(float(rng.uniform(3, 9)), 1) for _ in range(4))])


def setup(env: dict[str, str], home: Path, corpus: Path, plans: Path, labels: list[Path], work: Path) -> None:
    run(env, "ingest", str(corpus))
    run(env, "index", "build", "--cutoff", "2024-05-31", "--until", "2025-12-31")
    for system, topics in SYSTEMS.items():
        folder = work / system
        for topic in sorted(plans.iterdir()):
            if topic.is_dir() and topic.name.startswith(topics):
                shutil.copytree(topic, folder / topic.name)
        run(env, "score", str(folder), "--system", system, "--run", RUN, "--knowledge-cutoff", "2024-05-31")
    judge_file(home, work / "judge.csv")
    run(env, "judge", "import", str(work / "judge.csv"), "--run", RUN)
    for path in labels:
        run(env, "label", "import", str(path), "--run", RUN, "--annotator", "judged")
    if labels:
        run(env, "label", "draw", "--run", RUN, "--n", "30", "--seed", "2026")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="the COLING 2025 papers file")
    parser.add_argument("--plans", type=Path, required=True, help="AI-Researcher's experiment_plans/ folder")
    parser.add_argument("--labels", type=Path, action="append", default=[], help="a labelled file (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--home", type=Path, help="reuse this HINDSIGHT_HOME as set up by an earlier run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-report-"))
    home = args.home or work / "home"
    env = {**os.environ, "HINDSIGHT_HOME": str(home), "COLUMNS": "200"}
    if not (home / "hindsight.db").exists():
        start = time.perf_counter()
        setup(env, home, args.corpus, args.plans, args.labels, work)
        print(f"set up {home} in {time.perf_counter() - start:.0f} s (not timed)")
    options = ["report", "--run", RUN, "--judge", "bench-judge", *(["--labels"] if args.labels else [])]
    print(f"before: {uptime()}")
    yardstick = ["analyze", "systems", "--run", RUN, "--json"]
    times: dict[str, list[float]] = {"report.html": [], "report.md": [], "yardstick": []}
    for _ in range(args.rounds):
        for name in times:
            times[name].append(run(env, *yardstick) if name == "yardstick" else
                               run(env, *options, "--out", str(work / name)))
    print(f"after: {uptime()}")
    base = statistics.median(times.pop("yardstick"))
    print(f"hindsight {' '.join(yardstick)}: median {base:.2f} s")
    for name, took in times.items():
        median = statistics.median(took)
        verdict = "meets" if max(took) < GOAL_SECONDS else "MISSES"
        print(f"hindsight {' '.join(options)} --out {name}: median {median:.2f} s ({median / base:.1f}x the "
              f"yardstick), slowest {max(took):.2f} s over {len(took)} rounds ({verdict} the goal of "
              f"{GOAL_SECONDS:g} s)")
    print(f"files in {work}: {', '.join(sorted(p.name for p in work.iterdir() if p.is_file()))}")


if __name__ == "__main__":
    main()
