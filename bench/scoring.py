"""Scoring: ideas/s and latency through HTTP (a real uvicorn on 127.0.0.1) vs the same work in-process.

    .venv/bin/python bench/scoring.py [--n 300] [--requests 12] [--batches 1 8 32]

A temporary HINDSIGHT_HOME gets n real papers from the shared corpus and a real index build; ideas are other
papers' titles and first abstract sentence (problem + method). For each batch size, HTTP requests
(POST /v1/score) and in-process calls (the endpoint's own work: embed, search, threshold, impact, store under a run)
alternate, so both see the same machine load. Reports ideas/s, p50/p95/p99 latency, and the HTTP overhead
(goal: at most 15% at batch 32). Then one idea per request over HTTP with each matcher, dense and hybrid
alternating: p50/p90/p99/max of each and hybrid / dense at each (goal: hybrid p99 under 50 ms; the hybrid matcher
embeds the idea's problem and method on their own too, runs five BM25 queries and computes evidence). The server
inherits the environment, so `HINDSIGHT_SCORING_THREADS=N` sets its threads. Last, a large batch is scored while
/healthz is polled: encoding runs in the threadpool, so the event loop must keep answering. Then prior art on and
off, in process (the same flow): an index of papers on both sides of a cutoff (every venue and year of the corpus),
ideas scored at that cutoff with the look-back window (730 days) and without it, alternating, per matcher and batch
size; the cost per idea with prior art over without (goal: at most 1.30). `--only-prior-art` runs that part alone.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GOAL_OVERHEAD = 0.15
GOAL_HYBRID_P99_MS = 50.0
GOAL_PRIOR_ART = 1.30  # cost per idea with the look-back window over without
PRIOR_ART_CUTOFF = date(2024, 1, 1)  # the 2023 venues before it, 2024 and 2025 after


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path, port: int = 0) -> tuple[subprocess.Popen, str]:
    port = port or free_port()
    env = {**os.environ, "HINDSIGHT_HOME": str(home)}
    env.pop("HINDSIGHT_ADMIN_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "service.app:create_app", "--factory", "--host",
                             "127.0.0.1", "--port", str(port), "--log-level", "warning"], cwd=ROOT, env=env,
                            stdout=(home / "server.log").open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {(home / 'server.log').read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.terminate()
    raise SystemExit("server did not become ready")


TAILS = ("p50", "p90", "p99", "max")


def percentiles(values: list[float], points: tuple[str, ...] = ("p50", "p95", "p99")) -> dict:
    """Latencies in ms at "pNN" points (and "max")."""
    a = np.asarray(values) * 1000
    return {q: float(a.max() if q == "max" else np.percentile(a, int(q[1:]))) for q in points}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="papers indexed")
    parser.add_argument("--requests", type=int, default=12, help="requests per batch size and mode")
    parser.add_argument("--batches", type=int, nargs="*", default=[1, 8, 32])
    parser.add_argument("--large", type=int, default=256, help="ideas in the batch scored during the health check")
    parser.add_argument("--single", type=int, default=60, help="one-idea requests per matcher")
    parser.add_argument("--port", type=int, default=0, help="the server's loopback port (default: a free one)")
    parser.add_argument("--prior-art-requests", type=int, default=12,
                        help="requests per matcher, batch size and mode in the prior-art comparison (0: skip it)")
    parser.add_argument("--only-prior-art", action="store_true", help="run the prior-art comparison alone")
    args = parser.parse_args()
    if args.only_prior_art:
        prior_art_comparison(args)
        return

    from indexing.build import build_index
    from indexing.db import migrate
    from indexing.ingest import ingest_path
    from indexing.settings import Settings
    from service.scoring.flow import score_run
    from service.ideas.records import ReadResult
    from service.schemas import IdeaIn
    from service.state import IndexHolder
    from service.threads import apply_scoring_threads

    rows = corpus.papers()
    papers, rest = rows[:args.n], rows[args.n:]
    pool = [{"problem": r["title"], "method": r["abstract"].split(". ")[0]} for r in rest]
    if not pool:
        raise SystemExit("--n leaves no papers to make ideas from")

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        settings = Settings(home=home)
        migrate(settings.db_path)
        ingest_path(corpus.write_papers(Path(tmp) / "papers.jsonl", papers), db_path=settings.db_path)
        t0 = time.perf_counter()
        built = build_index(settings, cutoff=date(2000, 1, 1), until=date(2100, 12, 31))
        print(f"index {built.version}: {built.manifest['counts']['indexed']} papers built in "
              f"{time.perf_counter() - t0:.1f}s", flush=True)

        apply_scoring_threads(settings.service.scoring_threads)  # in-process scoring runs as the server does
        holder = IndexHolder(settings)
        loaded = holder.current()
        embedder = holder.embedder_for(loaded)

        def in_process(ideas: list[dict], run: str) -> None:  # what POST /v1/score runs, without HTTP
            score_run(settings, loaded=loaded, embedder=embedder, read=ReadResult.of([IdeaIn(**i) for i in ideas]),
                      system="bench", run=run)

        proc, url = start_server(home, args.port)
        try:
            client = httpx.Client(base_url=url, timeout=600)
            client.post("/v1/score", json={"system": "warm", "ideas": [{"id": "w", **pool[0]}]}).raise_for_status()
            in_process([{"id": "w", **pool[0]}], "warm")
            print(f"server {url}; load average {os.getloadavg()[0]:.1f}\n", flush=True)
            print(f"{'batch':>5} {'mode':<10} {'ideas/s':>8} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9}")
            summary = {}
            cursor = 0
            for batch in args.batches:
                lat = {"http": [], "in-process": []}
                for r in range(args.requests):
                    for mode in (("http", "in-process") if r % 2 == 0 else ("in-process", "http")):
                        ideas = [{"id": f"i{j}", **pool[(cursor + j) % len(pool)]} for j in range(batch)]
                        cursor += batch
                        run = f"{mode}-{batch}-{r}"
                        started = time.perf_counter()
                        if mode == "http":
                            body = {"system": "bench", "run": run, "ideas": ideas}
                            client.post("/v1/score", json=body).raise_for_status()
                        else:
                            in_process(ideas, run)
                        lat[mode].append(time.perf_counter() - started)
                for mode, values in lat.items():
                    p = percentiles(values)
                    print(f"{batch:>5} {mode:<10} {batch / statistics.mean(values):8.1f} {p['p50']:9.1f} "
                          f"{p['p95']:9.1f} {p['p99']:9.1f}", flush=True)
                pairs = [h / i for h, i in zip(lat["http"], lat["in-process"])]
                summary[batch] = statistics.median(pairs) - 1
            print()
            for batch, overhead in summary.items():
                verdict = "met" if overhead <= GOAL_OVERHEAD else "missed"
                goal = f"; goal <= {GOAL_OVERHEAD:.0%}: {verdict}" if batch == 32 else ""
                print(f"HTTP overhead at batch {batch}: {overhead:+.1%} (median of paired request ratios){goal}")

            single = {"dense": [], "hybrid": []}
            for r in range(args.single):
                for matcher in (("dense", "hybrid") if r % 2 == 0 else ("hybrid", "dense")):
                    idea = {"id": "one", **pool[(cursor + r) % len(pool)]}
                    started = time.perf_counter()
                    client.post("/v1/score", json={"system": "bench", "run": f"single-{matcher}", "matcher": matcher,
                                                   "ideas": [idea]}).raise_for_status()
                    single[matcher].append(time.perf_counter() - started)
            print(f"\none idea per request over HTTP, {args.single} requests per matcher, alternating "
                  f"(load average {os.getloadavg()[0]:.1f}):")
            print(f"  {'matcher':<7} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}")
            shown = {m: percentiles(v, TAILS) for m, v in single.items()}
            for matcher, p in shown.items():
                print(f"  {matcher:<7} " + " ".join(f"{p[q]:8.1f}" for q in TAILS))
            print(f"  {'ratio':<7} " + " ".join(f"{shown['hybrid'][q] / shown['dense'][q]:7.2f}x" for q in TAILS))
            p99 = shown["hybrid"]["p99"]
            print(f"hybrid p99 {p99:.1f} ms, goal < {GOAL_HYBRID_P99_MS:.0f} ms: "
                  f"{'met' if p99 < GOAL_HYBRID_P99_MS else 'missed'}")

            if args.large <= 0:
                return
            large = [{"id": f"L{j}", **pool[j % len(pool)]} for j in range(args.large)]
            done = threading.Event()
            result: dict = {}

            def score_large() -> None:
                started = time.perf_counter()
                resp = client.post("/v1/score", json={"system": "bench", "run": "large", "ideas": large})
                result.update(status=resp.status_code, seconds=time.perf_counter() - started)
                done.set()

            worker = threading.Thread(target=score_large)
            worker.start()
            time.sleep(0.3)
            health = []
            with httpx.Client(base_url=url, timeout=30) as probe:
                while not done.is_set() or not health:  # one probe at least: a small batch may beat the sleep
                    started = time.perf_counter()
                    ok = probe.get("/healthz").status_code == 200
                    health.append((ok, time.perf_counter() - started))
                    time.sleep(0.1)
            worker.join()
            answered = [t for ok, t in health if ok]
            print(f"\nhealth while scoring {args.large} ideas ({result['seconds']:.1f}s, HTTP {result['status']}): "
                  f"{len(answered)}/{len(health)} /healthz answered, median "
                  f"{1000 * np.median(answered or [np.nan]):.1f} ms, max {1000 * max(answered or [np.nan]):.1f} ms -> "
                  f"{'the event loop stays free' if answered and max(answered) < 1.0 else 'BLOCKED'}")
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    if args.prior_art_requests > 0:
        prior_art_comparison(args)


def prior_art_comparison(args: argparse.Namespace) -> None:
    """Scoring at PRIOR_ART_CUTOFF with and without the look-back window, alternating, in process."""
    from indexing.build import build_index
    from indexing.db import migrate
    from indexing.ingest import ingest_path
    from indexing.settings import Settings
    from service.scoring.flow import score_run
    from service.ideas.records import ReadResult
    from service.prior_art.window import lookback_window
    from service.schemas import IdeaIn
    from service.state import IndexHolder
    from service.threads import apply_scoring_threads

    rows = corpus.papers()
    step = max(1, len(rows) // args.n)
    papers = rows[::step][:args.n]  # every venue and year, on both sides of the cutoff
    taken = {r["id"] for r in papers}
    pool = [{"problem": r["title"], "method": r["abstract"].split(". ")[0]} for r in rows if r["id"] not in taken]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        settings = Settings(home=home)
        migrate(settings.db_path)
        ingest_path(corpus.write_papers(Path(tmp) / "papers.jsonl", papers), db_path=settings.db_path)
        built = build_index(settings, cutoff=date(2020, 1, 1), until=date(2100, 12, 31))
        apply_scoring_threads(settings.service.scoring_threads)
        holder = IndexHolder(settings)
        loaded = holder.current()
        embedder = holder.embedder_for(loaded)

        def scored(ideas: list[dict], run: str, matcher: str, prior_art: bool) -> float:
            started = time.perf_counter()
            done = score_run(settings, loaded=loaded, embedder=embedder, system="bench", run=run, matcher=matcher,
                             read=ReadResult.of([IdeaIn(**i) for i in ideas]), cutoff=PRIOR_ART_CUTOFF.isoformat(),
                             prior_art=prior_art)
            if prior_art:
                assert done.context.lookback_window and done.context.lookback_window["status"] == "known"
            return time.perf_counter() - started

        for matcher in ("dense", "hybrid"):  # warm: each window's BM25 and impacts are made on first use
            for on in (True, False):
                scored([{"id": "w", **pool[0]}], "warm", matcher, on)
        window = loaded.resolve_window(PRIOR_ART_CUTOFF)
        lookback = lookback_window(loaded, PRIOR_ART_CUTOFF, settings.matcher.prior_art_lookback_days)
        print(f"\nprior art on/off, in process: index {built.version} of {len(papers)} papers, cutoff "
              f"{PRIOR_ART_CUTOFF}: {window.papers} papers after, {lookback.papers} in the 730-day look-back window; "
              f"{args.prior_art_requests} requests per mode, alternating (load average {os.getloadavg()[0]:.1f})")
        print(f"  {'matcher':<7} {'batch':>5} {'off ms/idea':>12} {'on ms/idea':>11} {'on/off':>7} {'paired':>7}")
        cursor, worst = 0, 0.0
        for matcher in ("dense", "hybrid"):
            for batch in (1, 32):
                lat: dict[bool, list[float]] = {True: [], False: []}
                for r in range(args.prior_art_requests):
                    for on in ((True, False) if r % 2 == 0 else (False, True)):
                        ideas = [{"id": f"i{j}", **pool[(cursor + j) % len(pool)]} for j in range(batch)]
                        lat[on].append(scored(ideas, f"pa-{matcher}-{batch}-{r}-{on}", matcher, on) / batch)
                    cursor += batch  # the same ideas on and off
                ratio = statistics.mean(lat[True]) / statistics.mean(lat[False])  # the mean cost of an idea
                paired = statistics.median(a / b for a, b in zip(lat[True], lat[False]))
                worst = max(worst, ratio)
                print(f"  {matcher:<7} {batch:>5} {1000 * statistics.mean(lat[False]):12.1f} "
                      f"{1000 * statistics.mean(lat[True]):11.1f} {ratio:6.2f}x {paired:6.2f}x")
        print(f"prior art costs at most {worst:.2f}x per idea (mean time an idea with it over without; `paired`: the "
              f"median of paired request ratios), goal <= {GOAL_PRIOR_ART:.2f}x: "
              f"{'met' if worst <= GOAL_PRIOR_ART else 'missed'}")


if __name__ == "__main__":
    main()
