"""Scoring time of this tree against another checkout of HindSight (a baseline), on the same ideas and papers.

    .venv/bin/python bench/tree_scoring.py --home HOME --baseline DIR --ideas PATH [--format F] [--cutoff D]
        [--rounds 3] [--json OUT]

HOME holds ingested papers (and their embedding cache), e.g. the home bench/real_text.py leaves; DIR is another
checkout (`git worktree add ../base <commit>`), run with this venv's Python. Each tree gets its own copy of HOME and
builds its own index there first (from the cached vectors), since a version records the matcher of the tree that
built it. Then `hindsight score IDEAS --json` (prior art on, as by default) runs in each tree in turn, alternating
which goes first, so both see the same machine load. Printed: each round's seconds and the median ratio
this / baseline.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from real_text import cli  # noqa: E402


def timed(tree: Path, home: Path, *args: str) -> float:
    started = time.perf_counter()
    cli(home, *args, tree=tree)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--ideas", type=Path, required=True)
    ap.add_argument("--format", default="auto")
    ap.add_argument("--cutoff", default="2024-05-31")
    ap.add_argument("--build-cutoff", default="2022-01-01")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    args.ideas, args.home = args.ideas.resolve(), args.home.resolve()  # each tree runs in its own folder
    work = Path(tempfile.mkdtemp(prefix="hindsight-trees-"))
    trees = {"this": ROOT, "baseline": args.baseline.resolve()}
    homes = {}
    for name, tree in trees.items():
        homes[name] = work / name
        homes[name].mkdir()
        for item in ("hindsight.db", "models"):
            src = args.home / item
            if src.is_dir():
                shutil.copytree(src, homes[name] / item)
            elif src.exists():
                shutil.copy2(src, homes[name] / item)
        cli(homes[name], "index", "build", "--cutoff", args.build_cutoff, tree=tree)
    seconds: dict[str, list[float]] = {name: [] for name in trees}
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for name in order:
            seconds[name].append(round(timed(trees[name], homes[name], "score", str(args.ideas), "--format",
                                             args.format, "--system", "bench", "--run", f"round-{r}", "--cutoff",
                                             args.cutoff, "--json"), 2))
    ratios = [a / b for a, b in zip(seconds["this"], seconds["baseline"])]
    report = {"seconds": seconds, "ratio_median": round(statistics.median(ratios), 2),
              "load": os.getloadavg(), "baseline": str(trees["baseline"])}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
