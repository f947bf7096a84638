"""Rebuild under load: scoring keeps a steady rate while consecutive rebuilds are published; nothing fails and every
answer comes from a version that was current at the time, with matches consistent with that version."""

import time
from pathlib import Path

import httpx
import orjson

from tests.reliability.helpers import (
    SEED, TOKEN, paper_lines, rebuild, sample_ideas, scale, seeded_server, upload, write_report,
)
from tests.reliability.loadgen import LoadGenerator, VersionSnapshot, check_answer, latency_summary

REBUILDS = scale(2, 10)
NEW_PER_REBUILD = 4  # real embedding work in every rebuild, not only cache hits
BASELINE_SECONDS = scale(8, 30)
RATE = 3.0  # requests per second, both phases


def snapshot(home: Path, version: str, posted: float, confirmed: float) -> VersionSnapshot:
    folder = home / "indexes" / version
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    papers = orjson.loads((folder / "papers.json").read_bytes())
    return VersionSnapshot(version=version, theta=manifest["theta"], posted=posted, confirmed=confirmed,
                           impacts={p["paper_id"]: p["impact"] for p in papers})


def test_rebuilds_under_load(tmp_path: Path, live_server):
    home = tmp_path / "home"
    start = time.monotonic()
    server, first = seeded_server(live_server, home, lines=40)
    url = server.url
    versions = {first: snapshot(home, first, posted=0.0, confirmed=time.monotonic())}
    order = [first]
    ideas = sample_ideas()
    assert httpx.post(f"{url}/v1/score", json={"ideas": [ideas[0]]}, timeout=300).status_code == 200  # model warm

    before = LoadGenerator(url, ideas, rate=RATE, max_requests=int(RATE * BASELINE_SECONDS) + 1,
                           max_seconds=BASELINE_SECONDS + 5, seed=SEED).start()
    time.sleep(BASELINE_SECONDS)
    baseline = before.stop()

    budget = 120.0 * REBUILDS
    during = LoadGenerator(url, ideas, rate=RATE, max_requests=int(RATE * budget), max_seconds=budget,
                           seed=SEED + 1).start()
    rebuild_seconds = []
    try:
        for i in range(REBUILDS):
            new = paper_lines(40 + i * NEW_PER_REBUILD, 40 + (i + 1) * NEW_PER_REBUILD)
            assert upload(url, f"more-{i}.jsonl", ("\n".join(new) + "\n").encode()).status_code == 200
            posted = time.monotonic()
            job = rebuild(url)
            assert job["status"] == "succeeded", job
            version = job["result"]["version"]
            assert job["result"]["counts"]["embedded_new"] >= 1, job["result"]
            rebuild_seconds.append(round(time.monotonic() - posted, 2))
            versions[version] = snapshot(home, version, posted=posted, confirmed=time.monotonic())
            order.append(version)
            time.sleep(scale(1, 3))  # let requests land on each version
    finally:
        loaded = during.stop()

    problems = [p for a in baseline + loaded if a.status == 200 for p in check_answer(a, versions, order)]
    failures = [(a.status, a.error) for a in baseline + loaded if a.status != 200]
    seen = sorted({a.version for a in loaded if a.version})
    figures = {"rebuilds": REBUILDS, "rate_per_s": RATE, "before": latency_summary(baseline),
               "during": latency_summary(loaded), "rebuild_seconds": rebuild_seconds, "versions_published": order,
               "versions_answered_during": seen, "inconsistent_answers": len(problems),
               "wall_seconds": round(time.monotonic() - start, 1)}
    write_report("rebuild_under_load", figures)
    assert not failures, failures[:5]
    assert not problems, problems[:10]
    assert len(baseline) >= BASELINE_SECONDS * RATE * 0.5 and len(loaded) >= 5, figures
    assert len(seen) >= 2, f"load never observed a swap: {seen}"
    final = httpx.post(f"{url}/v1/score", json={"ideas": [ideas[0]]}, timeout=120).json()
    assert final["index_version"] == order[-1]
    assert TOKEN["Authorization"].split()[1] not in server.log_text()


def test_holder_follows_a_pointer_that_moves_during_a_load(tmp_path: Path, monkeypatch):
    """Two publishes while one load is in progress: the request waiting behind that load gets the newest."""
    import threading

    from indexing.settings import Settings
    from indexing.versions import set_current
    from service import state

    settings = Settings(home=tmp_path / "home")
    settings.indexes_dir.mkdir(parents=True)
    loading, release = threading.Event(), threading.Event()

    def slow_load(indexes_dir, version):
        if version == "v0002":
            loading.set()
            release.wait(10)
        return type("Loaded", (), {"version": version, "manifest": {}})()

    monkeypatch.setattr(state, "load_version", slow_load)
    holder = state.IndexHolder(settings)
    set_current(settings.indexes_dir, "v0001")
    holder.refresh()
    set_current(settings.indexes_dir, "v0002")
    first = threading.Thread(target=holder.refresh)
    first.start()
    assert loading.wait(10)
    set_current(settings.indexes_dir, "v0003")
    second = threading.Thread(target=holder.refresh)
    second.start()
    time.sleep(0.3)  # the second request is now waiting for the load lock
    release.set()
    first.join(10)
    second.join(10)
    assert holder._loaded.version == "v0003"
