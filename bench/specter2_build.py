"""SPECTER2-shaped build speed: whole `hindsight index build --model specter2 --json` commands per backend, against
fp32 torch in the same run, projected to the paper's 27,589 papers.

    .venv/bin/python bench/specter2_build.py [--n 600] [--baseline-n 120] [--candidates torch-bf16 auto] [--rounds 1]

The model is BERT-base-shaped with a seq_bn adapter from random weights (bench/build_speed.py's `random_specter2`:
they run as fast as the real weights, which cannot be fetched here). Every build runs in a fresh HINDSIGHT_HOME
holding the first n in-window shared abstracts, so every paper is embedded, and is timed as the whole CLI command:
imports, model load, worker start-up, embedding, FAISS, BM25, verify, publish. `openvino-int8` converts its IR
once per weights into HINDSIGHT_HOME/models: an untimed first build does that (its time is printed) and the timed
builds reuse it, as every later build of a home does. Two projections to 27,589 papers: "projected" pays the fixed
costs once (the command's imports and the build's model load, from its `stages`) and scales the rest (embedding,
index, BM25, verify, publish) by paper count; "bound" scales the whole command by paper count, as if every fixed
cost were paid per paper. Rounds interleave the baseline and the candidates (the machine may be shared); figures
are medians over rounds.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
from build_speed import random_specter2  # noqa: E402

PAPERS = 27_589
GOAL_MINUTES = 45
HINDSIGHT = str(Path(sys.executable).with_name("hindsight"))


def write_papers(path: Path, n: int) -> None:
    rows = [r for r in corpus.papers() if not corpus.before_cutoff(r)][:n]
    if len(rows) < n:
        raise SystemExit(f"only {len(rows)} in-window papers with abstracts in the shared corpus")
    corpus.write_papers(path, rows)


def build(root: Path, papers: Path, env: dict, backend: str, models: Path | None = None) -> tuple[float, dict]:
    """A fresh home with the papers ingested (untimed); the timed `index build`; returns (seconds, its answer)."""
    home = Path(tempfile.mkdtemp(dir=root, prefix=f"{backend}-"))
    env = {**env, "HINDSIGHT_HOME": str(home), "HINDSIGHT_SPECTER2_BACKEND": backend}
    subprocess.run([HINDSIGHT, "ingest", str(papers), "--json"], env=env, check=True, capture_output=True)
    if models is not None and models.is_dir():
        shutil.copytree(models, home / "models")
    started = time.perf_counter()
    done = subprocess.run([HINDSIGHT, "index", "build", "--model", "specter2", "--json"], env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"index build with {backend} failed:\n{done.stderr[-2000:]}")
    answer = json.loads(done.stdout)
    answer["home"] = home
    return seconds, answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=600, help="abstracts per candidate build (at least 600)")
    parser.add_argument("--baseline-n", type=int, default=120, help="abstracts in the fp32 baseline's build")
    parser.add_argument("--candidates", nargs="*", default=["torch-bf16", "auto"],
                        help="HINDSIGHT_SPECTER2_BACKEND values (auto: what a build picks here)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base, adapter = random_specter2(root / "weights")
        env = {**os.environ, "HINDSIGHT_SPECTER2_BASE": str(base), "HINDSIGHT_SPECTER2_ADAPTER": str(adapter)}
        env.pop("HINDSIGHT_HOME", None)
        for n in {args.n, args.baseline_n}:
            write_papers(root / f"papers-{n}.jsonl", n)
        models: dict[str, Path] = {}
        for backend in [b for b in args.candidates if not b.startswith("torch")]:  # a one-time conversion
            seconds, answer = build(root, root / f"papers-{args.n}.jsonl", env, backend)
            models[backend] = answer["home"] / "models"
            revision = answer["manifest"]["revision"]
            print(f"first build, {backend} ({revision}): {seconds:.1f}s for {args.n} papers", flush=True)
        runs: dict[str, list[tuple[float, float, float]]] = {"torch": [], **{b: [] for b in args.candidates}}
        for r in range(args.rounds):
            line = []
            for backend, n in [("torch", args.baseline_n), *((b, args.n) for b in args.candidates)]:
                seconds, answer = build(root, root / f"papers-{n}.jsonl", env, backend, models.get(backend))
                indexed = answer["manifest"]["counts"]["indexed"]
                fixed = seconds - answer["seconds"] + answer["stages"]["start"]  # imports + model load
                runs[backend].append((indexed / seconds, (seconds - fixed) / indexed, fixed))
                line.append(f"{backend} {indexed} papers {seconds:.1f}s ({indexed / seconds:.2f}/s; fixed "
                            f"{fixed:.1f}s, embed {answer['stages']['embed']:.1f}s)")
            print(f"round {r + 1}: " + "; ".join(line) + f" (load {os.getloadavg()[0]:.1f})", flush=True)

    base_rate = statistics.median(r for r, _, _ in runs["torch"])
    print(f"\n{'backend':<16} {'texts/s':>8} {'vs fp32':>8} {'fixed':>7} {'projected':>10} {'bound':>8}  goal "
          f"(27,589 papers)")
    for backend, values in runs.items():
        rate = statistics.median(r for r, _, _ in values)
        per_paper, fixed = statistics.median(p for _, p, _ in values), statistics.median(f for _, _, f in values)
        minutes, bound = (fixed + PAPERS * per_paper) / 60, PAPERS / rate / 60
        verdict = "" if backend == "torch" else \
            f"{'met' if minutes <= GOAL_MINUTES else 'missed'} (<= {GOAL_MINUTES} min)"
        print(f"{backend:<16} {rate:8.2f} {rate / base_rate:8.2f} {fixed:6.1f}s {minutes:6.0f} min {bound:4.0f} min  "
              f"{verdict}")


if __name__ == "__main__":
    main()
