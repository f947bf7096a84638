"""Start-up: each command as a whole process, as a user runs it, against `pip --help` measured in the same run.

    .venv/bin/python bench/startup.py [--rounds 5] [--home DIR] [--skip serve]

A HINDSIGHT_HOME (a temporary one unless --home names one) gets the bundled sample as ./scripts/demo.sh makes it:
data/papers.jsonl ingested, the index built with the default backend (its model converted once), the sample systems
declared and one run scored. Not timed. Then, round after round, the commands run in turn, so that every one sees
the same machine load: `pip --help` (the yardstick), `hindsight --help`, `hindsight index status --json`,
`hindsight analyze systems --run demo`, `hindsight score data/ideas/rag.jsonl` (12 ideas, a new run each round) and
`hindsight serve`, timed from its start until its first POST /v1/score (one idea) answers. Prints each command's
median and its ratio to pip's median, against the goals of issue 43: --help <= 3x, index status <= 5x, score of the
12 ideas <= 20x, serve's first score within 15 s.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
IDEAS = ROOT / "data" / "ideas" / "rag.jsonl"
GOALS = {"--help": ("ratio", 3.0), "index status --json": ("ratio", 5.0), "score 12 ideas": ("ratio", 20.0),
         "serve to first score": ("seconds", 15.0)}


def hindsight(*args: str) -> list[str]:
    script = BIN / "hindsight"
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "service.cli", *args]


def pip_help() -> list[str]:
    script = BIN / "pip"
    return [str(script), "--help"] if script.exists() else [sys.executable, "-m", "pip", "--help"]


def run(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return took


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_to_first_score(env: dict[str, str], idea: dict, timeout: float = 300) -> float:
    """Seconds from starting `hindsight serve` to the answer of its first POST /v1/score."""
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(hindsight("serve", "--port", str(port), "--log-level", "warning"), cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=timeout) as client:
            while time.perf_counter() - start < timeout:
                if proc.poll() is not None:
                    raise SystemExit(f"serve exited ({proc.returncode}): {proc.stderr.read().decode()[-2000:]}")
                try:
                    answer = client.post("/v1/score", json={"system": "bench", "run": "startup", "ideas": [idea]})
                except httpx.TransportError:
                    time.sleep(0.05)
                    continue
                if answer.status_code != 200:
                    raise SystemExit(f"POST /v1/score answered {answer.status_code}: {answer.text[:500]}")
                return time.perf_counter() - start
        raise SystemExit(f"serve did not answer within {timeout} s")
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def prepare(env: dict[str, str]) -> None:
    """The demo's state: the sample ingested, the index built, the systems declared, a run to analyse."""
    steps = [hindsight("ingest", str(ROOT / "data" / "papers.jsonl")),
             hindsight("system", "set", "rag-generator", "--knowledge-cutoff", "2023-12-01"),
             hindsight("system", "set", "vanilla-generator", "--knowledge-cutoff", "2024-06-01")]
    status = subprocess.run(hindsight("index", "status", "--json"), cwd=ROOT, env=env, capture_output=True,
                            text=True)
    if status.returncode != 0 or not json.loads(status.stdout or "{}").get("manifest"):
        steps.insert(1, hindsight("index", "build"))
    steps += [hindsight("score", str(ROOT / "data" / "ideas" / name), "--system", system, "--run", "demo",
                        "--cutoff", "2024-06-01")
              for name, system in (("rag.jsonl", "rag-generator"), ("vanilla.jsonl", "vanilla-generator"))]
    for cmd in steps:
        took = run(cmd, env)
        print(f"  setup: {' '.join(cmd[1:])[:90]} ({took:.1f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--home", type=Path, help="HINDSIGHT_HOME to use (default: a temporary one)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["analyze", "score", "serve"])
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="hindsight-startup-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_HOME": str(home), "HINDSIGHT_VERIFIER": "none", "COLUMNS": "120"}
    print(f"home {home}; {os.cpu_count()} CPUs; python {sys.version.split()[0]}", flush=True)
    prepare(env)
    idea = json.loads(IDEAS.read_text(encoding="utf-8").splitlines()[0])
    commands: dict[str, object] = {
        "pip --help": pip_help(),
        "--help": hindsight("--help"),
        "index status --json": hindsight("index", "status", "--json"),
        "analyze systems": hindsight("analyze", "systems", "--run", "demo"),
        "score 12 ideas": None,
        "serve to first score": None,
    }
    if "analyze" in args.skip:
        commands.pop("analyze systems")
    if "score" in args.skip:
        commands.pop("score 12 ideas")
    if "serve" in args.skip:
        commands.pop("serve to first score")
    times: dict[str, list[float]] = {name: [] for name in commands}
    for r in range(args.rounds):
        for name, cmd in commands.items():
            if name == "score 12 ideas":
                took = run(hindsight("score", str(IDEAS), "--system", "rag-generator", "--run", f"startup-{r}",
                                     "--json"), env)
            elif name == "serve to first score":
                took = serve_to_first_score(env, {"id": f"startup-{r}", "problem": idea["problem"],
                                                  "method": idea["method"]})
            else:
                took = run(cmd, env)  # type: ignore[arg-type]
            times[name].append(took)
        print(f"round {r + 1}: " + ", ".join(f"{n} {t[-1]:.2f}s" for n, t in times.items()), flush=True)
    base = statistics.median(times["pip --help"])
    print(f"\n{'command':<24}{'median s':>10}{'x pip':>8}  goal")
    for name, found in times.items():
        median = statistics.median(found)
        ratio = median / base
        goal = GOALS.get(name)
        verdict = ""
        if goal:
            kind, bound = goal
            met = (ratio if kind == "ratio" else median) <= bound
            verdict = f"{'<=' if kind == 'ratio' else 'within'} {bound:g}{'x' if kind == 'ratio' else ' s'}: " \
                      f"{'met' if met else 'MISSED'}"
        print(f"{name:<24}{median:>10.2f}{ratio:>8.1f}  {verdict}")


if __name__ == "__main__":
    main()
