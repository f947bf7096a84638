"""llama.cpp builds against each other on this CPU: the packaged model's load time, prompt evaluation (one batch of
--prompt tokens) and decode (--decode single-token steps) in tokens per second, each build in its own child process
(a build that crashes is reported with its signal, not as a dead benchmark), rounds alternating between builds; the
ratios are against the first --python's build, measured in the same run.

    .venv/bin/python bench/llm_build.py --python .venv/bin/python --python /path/to/other/venv/bin/python \
        [--model FILE] [--prompt 391] [--decode 32] [--rounds 3] [--threads 2] [--json]

Each --python needs llama-cpp-python only (this project need not be installed there). The model defaults to the
packaged one under HINDSIGHT_HOME (the `verifier` extra).
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from indexing.llm.worker import signal_name  # noqa: E402

CHILD = r"""
import json, sys, time
import llama_cpp
model, n_prompt, n_decode, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
info = llama_cpp.llama_print_system_info().decode(errors="replace")
t = time.perf_counter()
llm = llama_cpp.Llama(model_path=model, n_ctx=2048, n_threads=threads, n_batch=512, logits_all=False, verbose=False)
load = time.perf_counter() - t
text = b"The Rhine rises in the Swiss Alps and reaches the North Sea near Rotterdam. " * 64
out = {"info": info, "load_s": load}
print(json.dumps(out), flush=True)
llm.eval(llm.tokenize(text)[:1])  # one token first: the path every build runs (warm-up)
t = time.perf_counter()
for tok in llm.tokenize(text)[1:1 + n_decode]:
    llm.eval([tok])
out["decode_tps"] = n_decode / (time.perf_counter() - t)
print(json.dumps(out), flush=True)
llm.reset()
t = time.perf_counter()
llm.eval(llm.tokenize(text)[:n_prompt])
out["prompt_tps"] = n_prompt / (time.perf_counter() - t)
print(json.dumps(out), flush=True)
"""


def run(python: str, model: Path, args: argparse.Namespace) -> dict:
    done = subprocess.run([python, "-c", CHILD, str(model), str(args.prompt), str(args.decode), str(args.threads)],
                          capture_output=True, text=True, timeout=1800)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    got = lines[-1] if lines else {}
    if done.returncode < 0:
        got["crashed"] = signal_name(done.returncode)
    elif done.returncode:
        got["crashed"] = f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", help="an interpreter with a llama-cpp-python build (repeat)")
    parser.add_argument("--model", type=Path)
    parser.add_argument("--prompt", type=int, default=391)
    parser.add_argument("--decode", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pythons = args.python or [sys.executable]
    model = args.model
    if model is None:
        from indexing.llm.model_files import model_file
        from indexing.settings import Settings

        model = model_file(Settings())[0]
    runs: dict[str, list[dict]] = {p: [] for p in pythons}
    for _ in range(args.rounds):
        for python in pythons:
            runs[python].append(run(python, model, args))
    report = []
    for python, got in runs.items():
        row: dict = {"python": python, "system_info": got[0].get("info", ""),
                     "crashed": sorted({g["crashed"] for g in got if "crashed" in g})}
        for measure in ("load_s", "decode_tps", "prompt_tps"):
            values = [g[measure] for g in got if measure in g]
            row[measure] = round(statistics.median(values), 3) if values else None
        report.append(row)
    base = report[0]
    for row in report:
        for measure in ("decode_tps", "prompt_tps"):
            row[f"{measure}_ratio"] = (round(row[measure] / base[measure], 3)
                                       if row[measure] and base[measure] else None)
    if args.json:
        print(json.dumps({"model": str(model), "prompt": args.prompt, "decode": args.decode,
                          "threads": args.threads, "rounds": args.rounds, "builds": report}, indent=1))
        return
    print(f"model {model.name}; prompt {args.prompt} tokens, decode {args.decode} tokens, {args.threads} threads, "
          f"median of {args.rounds} rounds; ratios against the first build")
    for row in report:
        amx = "AMX_INT8 = 1" in row["system_info"]
        print(f"{row['python']}: {'AMX' if amx else 'no AMX'}; load {row['load_s']} s; decode {row['decode_tps']} "
              f"tok/s (x{row['decode_tps_ratio']}); prompt {row['prompt_tps']} tok/s (x{row['prompt_tps_ratio']})"
              + (f"; crashed: {', '.join(row['crashed'])}" if row["crashed"] else ""))


if __name__ == "__main__":
    main()
