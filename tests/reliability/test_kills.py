"""Kills: SIGKILL `hindsight ingest` and `hindsight index build` at seeded random points (an N-th I/O event, or a
random moment), then check that nothing is corrupt, nothing partial is visible, nothing committed is lost, the
current index loads and answers, and the next build completes."""

import random
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from indexing.build import build_index
from indexing.db import migrate
from indexing.ingest import ingest_bytes
from indexing.settings import Settings
from indexing.versions import current_version, load_version
from tests.helpers import ROOT
from tests.helpers import HINDSIGHT, clean_env
from tests.reliability.helpers import (
    SEED, jsonl, paper_lines, sample_ideas, scale, synthetic_papers, write_report,
)

KILLS = scale(4, 50)
PAPERS_PER_FILE = 6
KILLPOINT = [sys.executable, "-m", "tests.reliability.killpoint"]


@dataclass
class Tally:
    attempts: int = 0
    kills: int = 0
    completed: int = 0  # the process finished before its kill point
    corrupt: list[str] = field(default_factory=list)
    by_op: dict[str, int] = field(default_factory=lambda: {"ingest": 0, "build": 0})


def run_killpoint(home: Path, args: list[str], kill_at: int, count_file: Path, timeout: float = 600) -> int:
    env = clean_env(home) | {"HINDSIGHT_KILL_AT": str(kill_at), "HINDSIGHT_KILL_COUNT": str(count_file)}
    return subprocess.run([*KILLPOINT, *args], cwd=ROOT, env=env, capture_output=True, timeout=timeout).returncode


def run_and_kill_after(home: Path, args: list[str], delay: float, timeout: float = 600) -> int:
    proc = subprocess.Popen([*HINDSIGHT, *args], cwd=ROOT, env=clean_env(home), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        proc.wait(delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
    return proc.wait(timeout)


def calibrate(home: Path, args: list[str], tmp: Path) -> tuple[int, float]:
    """Run the command to the end once, counting its events: (events, seconds)."""
    count = tmp / "count.txt"
    started = time.monotonic()
    assert run_killpoint(home, args, 0, count) == 0
    return int(count.read_text().split()[0]), time.monotonic() - started


def db_problems(db: Path) -> list[str]:
    con = sqlite3.connect(db, timeout=30)
    try:
        integrity = [r[0] for r in con.execute("PRAGMA integrity_check")]
        fk = con.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        con.close()
    return ([f"integrity_check: {integrity[:3]}"] if integrity != ["ok"] else []) + \
        ([f"foreign_key_check: {fk[:3]}"] if fk else [])


def present(db: Path, ids: list[str]) -> int:
    con = sqlite3.connect(db, timeout=30)
    try:
        marks = ",".join("?" * len(ids))
        return con.execute(f"SELECT count(*) FROM papers WHERE paper_id IN ({marks})", ids).fetchone()[0]
    finally:
        con.close()


def index_problems(settings: Settings, url: str, idea: dict) -> list[str]:
    """The current version loads, finds its own vectors, and the live server answers from it."""
    version = current_version(settings.indexes_dir)
    if version is None:
        return ["no current version"]
    try:
        loaded = load_version(settings.indexes_dir, version)
    except Exception as exc:  # any failure to load is what this check looks for
        return [f"current version {version} does not load: {exc}"]
    key = next(iter(loaded.papers))
    probe = loaded.index.index.reconstruct(key)[None, :].astype(np.float32)
    hits = loaded.search(probe, 1)[0]
    problems = [] if hits and hits[0][0]["key"] == key else [f"{version} does not find its own vector"]
    ready = httpx.get(f"{url}/readyz", timeout=60)
    if ready.status_code != 200:
        problems.append(f"/readyz {ready.status_code}: {ready.text[:300]}")
    scored = httpx.post(f"{url}/v1/score", json={"system": "kills", "ideas": [idea]}, timeout=120)
    if scored.status_code != 200 or scored.json()["index_version"] != version:
        problems.append(f"score: {scored.status_code} {scored.text[:300]}")
    return problems


def leftovers(settings: Settings) -> list[str]:
    """Debris a finished build must not leave behind: staging folders, builds still marked running."""
    staging = [p.name for p in settings.indexes_dir.glob(".build-*")]
    con = sqlite3.connect(settings.db_path, timeout=30)
    try:
        running = con.execute("SELECT id FROM index_builds WHERE status = 'running'").fetchall()
    finally:
        con.close()
    return ([f"staging folders left: {staging}"] if staging else []) + \
        ([f"builds still 'running': {running}"] if running else [])


def test_sigkill_ingest_and_build(tmp_path: Path, live_server, minilm):
    rng = random.Random(SEED)
    home = tmp_path / "home"
    settings = Settings(home=home)
    migrate(settings.db_path)
    ingest_bytes(("\n".join(paper_lines(0, 30)) + "\n").encode(), "seed.jsonl", db_path=settings.db_path)
    build_index(settings, embedder=minilm)
    server = live_server(home)
    idea = sample_ideas()[0]
    assert not index_problems(settings, server.url, idea)

    files_dir = tmp_path / "files"
    files_dir.mkdir()

    def fresh_files(tag: str) -> list[tuple[Path, list[str]]]:
        out = []
        for part in "ab":
            rows = synthetic_papers(f"{tag}{part}", PAPERS_PER_FILE, rng)
            path = files_dir / f"{tag}{part}.jsonl"
            path.write_bytes(jsonl(rows))
            out.append((path, [r["id"] for r in rows]))
        return out

    calib = fresh_files("calib")
    n_ingest, t_ingest = calibrate(home, ["ingest", *map(str, (p for p, _ in calib))], tmp_path)
    ingest_bytes(jsonl(synthetic_papers("calibbuild", 4, rng)), "cb.jsonl", db_path=settings.db_path)
    n_build, t_build = calibrate(home, ["index", "build"], tmp_path)
    committed: list[list[str]] = [ids for _, ids in calib]

    tally = Tally()
    started = time.monotonic()
    k = 0
    # a run can finish before its kill point (counts and timings vary): go on until KILLS kills, within a bound
    while tally.kills < KILLS and tally.attempts < 3 * KILLS:
        k += 1
        op = "ingest" if tally.by_op["ingest"] <= tally.by_op["build"] else "build"
        if op == "ingest":
            files = fresh_files(f"k{k}")
            args = ["ingest", *(str(p) for p, _ in files)]
            events, seconds = n_ingest, t_ingest
        else:
            files = []
            ingest_bytes(jsonl(synthetic_papers(f"k{k}new", 3, rng)), f"k{k}.jsonl", db_path=settings.db_path)
            args = ["index", "build"]
            events, seconds = n_build, t_build
        tally.attempts += 1
        if rng.random() < 0.5:
            point = rng.randint(1, events)
            code = run_killpoint(home, args, point, tmp_path / "killed.txt")
            where = f"event {point}/{events}"
        else:
            delay = rng.uniform(0.1, 0.9 * seconds)
            code = run_and_kill_after(home, args, delay)
            where = f"{delay:.2f}s/{seconds:.1f}s"
        if code == -signal.SIGKILL:
            tally.kills += 1
            tally.by_op[op] += 1
        elif code == 0:
            tally.completed += 1
        else:
            tally.corrupt.append(f"kill {k} ({op} at {where}): exited {code} without being killed")

        problems = db_problems(settings.db_path)
        for _, ids in files:
            n = present(settings.db_path, ids)
            if n not in (0, len(ids)):
                problems.append(f"partial ingest visible: {n}/{len(ids)} rows of one file")
            elif n:
                committed.append(ids)
        lost = [ids[0] for ids in committed if present(settings.db_path, ids) != len(ids)]
        if lost:
            problems.append(f"committed files lost rows: {lost[:3]}")
        problems += index_problems(settings, server.url, idea)
        try:
            result = build_index(settings, embedder=minilm)
            if current_version(settings.indexes_dir) != result.version:
                problems.append(f"next build {result.version} is not current")
        except Exception as exc:  # the next build must complete whatever the kill left behind
            problems.append(f"next build failed: {exc}")
        problems += leftovers(settings) + index_problems(settings, server.url, idea)
        tally.corrupt += [f"kill {k} ({op} at {where}): {p}" for p in problems]

    write_report("kills", {"kills_planned": KILLS, "attempts": tally.attempts, "kills_done": tally.kills,
                           "kills_by_op": tally.by_op, "finished_before_kill_point": tally.completed,
                           "corrupt_states": len(tally.corrupt), "details": tally.corrupt[:20],
                           "calibration": {"ingest_events": n_ingest, "build_events": n_build,
                                           "ingest_seconds": round(t_ingest, 1), "build_seconds": round(t_build, 1)},
                           "seed": SEED, "seconds": round(time.monotonic() - started, 1)})
    assert not tally.corrupt, tally.corrupt
    assert tally.kills == KILLS, f"only {tally.kills} kills in {tally.attempts} attempts"
