"""Does a per-request window give the answer of an index built at that cutoff, and a Ray Data build the answer of a
single-process build? Both hold only when a paper's vector is its text's alone (indexing/embedders/solo.py).

    .venv/bin/python bench/window_equivalence.py [--ideas 40] [--cutoff 2024-06-15] [--ray]

Real commands, each build in a fresh HINDSIGHT_HOME (no shared embedding cache) on MiniLM's default backend
(`auto`, unless HINDSIGHT_MINILM_BACKEND says otherwise): the shared paperlists (four venues, 2023-2025, year-only
dates) and COLING 2025 ingested; a wide index over 2023-01-01..2025-12-31 and a narrow one built at --cutoff; the
same held-out ideas (a seeded draw of the labelled COLING 2025 ideas, problem + method) scored on the wide index with
--cutoff and on the narrow one. Prints, per pair of answers, the ideas whose top 20 (ids in order) and score agree,
and the papers both builds embedded with identical vectors. --ray builds the wide index a second time on Ray Data.
"""

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
IDEAS = ROOT / "data" / "labelled" / "coling2025_ideas.jsonl"
WIDE = ("2023-01-01", "2025-12-31")


def hindsight(home: Path, *args: str) -> dict:
    env = {**os.environ, "HINDSIGHT_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "service.cli", *args, "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"hindsight {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def corpus_files() -> list[str]:
    return sorted(str(p) for p in (SHARED / "paperlists").glob("*/*.json")) + [
        str(SHARED / "generators" / "corpus" / "coling2025.json")]


def built(home: Path, cutoff: str, *extra: str) -> dict:
    hindsight(home, "ingest", *corpus_files())
    return hindsight(home, "index", "build", "--cutoff", cutoff, "--until", WIDE[1], *extra)


def answers(home: Path, ideas: Path, run: str, *extra: str) -> dict[str, tuple[list[str], float]]:
    got = hindsight(home, "score", str(ideas), "--run", run, *extra)
    return {i["id"]: ([m["paper_id"] for m in i["matches"]], i["score"]) for i in got["ideas"]}


def agreement(a: dict, b: dict) -> tuple[int, int, int]:
    """(ideas with the same top 20 in order, ideas with the same score, ideas)."""
    return (sum(a[k][0] == b[k][0] for k in a), sum(abs(a[k][1] - b[k][1]) < 1e-9 for k in a), len(a))


def same_vectors(a: Path, b: Path) -> tuple[int, int]:
    """(papers whose cached vectors are identical in both homes, papers both embedded)."""
    def vectors(home: Path) -> dict[str, bytes]:
        with sqlite3.connect(home / "hindsight.db") as db:
            return dict(db.execute("SELECT content_hash, vector FROM embeddings"))
    va, vb = vectors(a), vectors(b)
    both = va.keys() & vb.keys()
    return sum(va[h] == vb[h] for h in both), len(both)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ideas", type=int, default=40)
    parser.add_argument("--cutoff", default="2024-06-15")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ray", action="store_true", help="also build the wide index on Ray Data")
    args = parser.parse_args()
    rows = [json.loads(line) for line in IDEAS.read_text().splitlines() if line.strip()]
    picked = random.Random(args.seed).sample(rows, args.ideas)
    with tempfile.TemporaryDirectory(prefix="hs-windows-") as tmp:
        tmp_path = Path(tmp)
        ideas = tmp_path / "ideas.jsonl"
        ideas.write_text("".join(json.dumps({"id": r["id"], "problem": r["problem"], "method": r["method"]}) + "\n"
                                 for r in picked))
        wide, narrow = tmp_path / "wide", tmp_path / "narrow"
        w = built(wide, WIDE[0])
        n = built(narrow, args.cutoff)
        print(f"backend {w['manifest']['backend']}, revision {w['manifest']['revision']}; wide index "
              f"{w['manifest']['counts']['indexed']} papers, narrow (cutoff {args.cutoff}) "
              f"{n['manifest']['counts']['indexed']}")
        at_cutoff = answers(wide, ideas, "wide", "--cutoff", args.cutoff)
        own = answers(narrow, ideas, "narrow")
        top, score, total = agreement(at_cutoff, own)
        print(f"wide index at --cutoff {args.cutoff} vs index built at it: same top 20 for {top} of {total} ideas, "
              f"same score for {score}")
        same, both = same_vectors(wide, narrow)
        print(f"papers embedded by both builds with identical vectors: {same} of {both}")
        if args.ray:
            ray = tmp_path / "ray"
            built(ray, WIDE[0], "--engine", "ray")
            top, score, total = agreement(answers(wide, ideas, "local"), answers(ray, ideas, "ray"))
            print(f"Ray Data build vs single-process build: same top 20 for {top} of {total} ideas, same score "
                  f"for {score}")
            same, both = same_vectors(wide, ray)
            print(f"papers embedded by both with identical vectors: {same} of {both}")


if __name__ == "__main__":
    main()
