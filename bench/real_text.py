"""The matcher on real idea text, against people's labels: the 213 AI-Researcher ideas (May 2024) scored on the
default path with prior art, then their judged pairs on both sides of the cutoff read back, pair by pair.

    .venv/bin/python bench/real_text.py --plans DIR --corpus DIR [--labels FILE...] [--home DIR] [--json OUT]

--plans: AI-Researcher's `experiment_plans/` folder; --corpus: the folder of the paperlists files `coling2025.json`
(after the ideas' cutoff) and `acl2022.json`, `naacl2022.json`, `coling2022.json` (before it); --labels: judged
files (default: data/labelled/ai_researcher_*.jsonl), each reading measured on its own (a file whose name holds
`lookback` against the look-back side). One home (a temporary one by default) is built from
2022-01-01 and the ideas are scored at 2024-05-31 with the default 730-day look-back, as `hindsight score` does.

A judged pair is (idea, paper in its `reviewed` list); truth: `same_problem` (direction) and
`same_problem_and_approach` (realised). The matcher calls a pair when the paper is among the idea's listed matches
on its side (forward: after the cutoff, look-back: before) with that decision; a reviewed paper it did not list is a
"no". Precision and recall per decision and side, with Wilson 95% intervals; calls on papers nobody judged are
counted apart (`unjudged_calls`), never as right or wrong. Also printed: the time `hindsight score` took.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from scripts.generator_mappings import labels_of  # noqa: E402
from service.analyses.prior_art import wilson  # noqa: E402
CLI = [sys.executable, "-m", "service.cli"]
AFTER, BEFORE = ("coling2025.json",), ("acl2022.json", "naacl2022.json", "coling2022.json")
DECISIONS = {"realised": "same_problem_and_approach", "direction": "same_problem"}


def cli(home: Path, *args: str, tree: Path = ROOT) -> str:
    """`hindsight ARGS` of a checkout (this one by default) on a home; its stdout, or exit naming the failure."""
    done = subprocess.run([*CLI, *args], cwd=tree, env={**os.environ, "HINDSIGHT_HOME": str(home),
                                                          "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: hindsight {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def interval(k: int, n: int) -> list[float] | None:
    ci = wilson(k, n, 0.95)
    return [round(x, 3) for x in ci] if ci else None


def rate(k: int, n: int) -> dict:
    return {"value": round(k / n, 3) if n else None, "k": k, "n": n, "ci95": interval(k, n)}


def pair_figures(results: list[dict], labels: dict[str, dict], side: str) -> dict:
    """Precision and recall per decision over the judged pairs of one side."""
    by_id = {r["id"]: r for r in results}
    out = {}
    for decision, field in DECISIONS.items():
        tp = fp = fn = unjudged = ideas = 0
        for idea, lab in labels.items():
            r = by_id.get(idea)
            if r is None:
                continue
            ideas += 1
            listed = r["matches"] if side == "forward" else (r.get("prior_art") or {}).get("matches", [])
            called = {m["paper_id"] for m in listed if m.get(decision)}
            truth, reviewed = set(lab[field]), set(lab["reviewed"])
            tp += len(called & truth)
            fp += len((called & reviewed) - truth)
            fn += len(truth - called)
            unjudged += len(called - reviewed)
        out[decision] = {"ideas": ideas, "positives": tp + fn, "precision": rate(tp, tp + fp),
                         "recall": rate(tp, tp + fn), "unjudged_calls": unjudged}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plans", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--labels", type=Path, nargs="*")
    ap.add_argument("--home", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    labels = args.labels or sorted((ROOT / "data/labelled").glob("ai_researcher_*.jsonl"))
    home = args.home or Path(tempfile.mkdtemp(prefix="hindsight-real-text-"))
    cli(home, "ingest", *[str(args.corpus / f) for f in AFTER + BEFORE])
    cli(home, "index", "build", "--cutoff", "2022-01-01")
    started = time.perf_counter()
    answer = json.loads(cli(home, "score", str(args.plans), "--format", "ai-researcher", "--system", "ai-researcher",
                            "--run", "real-text", "--cutoff", "2024-05-31", "--json"))
    seconds = time.perf_counter() - started
    results = answer["ideas"]
    # one reading per file stem: the two air files are one reading of all 213 ideas
    readings: dict[str, list[Path]] = {}
    for path in labels:
        readings.setdefault(path.stem.rstrip("0123456789").rstrip("_").removesuffix("_air"), []).append(path)
    report = {"ideas": len(results), "score_seconds": round(seconds, 1),
              "matcher": answer.get("matcher_version"), "revision": answer.get("revision"),
              "readings": {name: pair_figures(results, labels_of(paths),
                                              "lookback" if "lookback" in name else "forward")
                           for name, paths in sorted(readings.items())}}
    text = json.dumps(report, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
