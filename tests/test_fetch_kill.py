"""SIGKILL `hindsight fetch` mid-walk ten times at random points: every resume ends with exactly the records, pages
and counts of an uninterrupted walk (the checkpoint commits with its page)."""

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from indexing.db import migrate
from indexing.fetch import checkpoint, openalex
from indexing.fetch.walk import run
from indexing.settings import Settings
from tests.factories import corpus
from tests.helpers import ROOT
from tests.replay_server import APIS, Replay, openalex_pages, recorded

pytestmark = [pytest.mark.server, pytest.mark.skipif(not APIS.is_dir(), reason="needs ../shared/data/apis")]
KILLS = 10


def records() -> list[dict]:
    return (recorded("openalex/works_cursor_first_page.json")["results"]
            + [recorded("openalex/work_single.json"), recorded("openalex/work_single_null_title.json")])


def fetch_cmd(url: str) -> list[str]:
    return [sys.executable, "-m", "service.cli", "fetch", "openalex", "--base-url", url, "--json"]


def test_sigkill_mid_walk_ten_times_then_resume(tmp_path):
    rng = random.Random(int(os.environ.get("HINDSIGHT_KILL_SEED", "20261201")))
    pages = openalex_pages(records(), per_page=1)  # 14 pages and the end page
    clean = Settings(home=tmp_path / "clean", fetch={"openalex_pace": 0})
    migrate(clean.db_path)
    server = Replay(openalex=pages)
    try:
        clean_state = run(clean, openalex.plan(clean, base_url=server.url)).state
    finally:
        server.close()
    expected = corpus(clean)

    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_HOME": str(home), "HINDSIGHT_OPENALEX_PACE": "0", "HINDSIGHT_FETCH_TIMEOUT": "5"}
    server = Replay(openalex=pages, delay=0.03)
    kills = 0
    try:
        while kills < KILLS:
            proc = subprocess.Popen(fetch_cmd(server.url), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            target = server.served + 1
            while server.served < target and proc.poll() is None:
                time.sleep(0.002)
            time.sleep(rng.uniform(0, 0.06))  # inside raw write, ingest, commit or the next request
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait(10)
            assert proc.returncode in (0, -signal.SIGKILL)
            if proc.returncode == 0:
                break  # finished before this kill (should not happen with 14 pages)
        done = subprocess.run(fetch_cmd(server.url), cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    finally:
        server.close()
    assert kills == KILLS
    settings = Settings(home=home)
    assert corpus(settings) == expected
    state = checkpoint.load(settings.db_path, openalex.plan(settings, base_url=server.url).key)
    assert state.done and (state.pages, state.records, state.counts) == (
        clean_state["pages"], clean_state["records"], clean_state["counts"])  # no page counted twice or skipped
    raw = home / "raw" / "openalex" / state.key
    assert len(list(raw.glob("page-*.json.gz"))) == 14 and not list(raw.glob(".*.tmp"))
