"""End to end against a real uvicorn server on a loopback port: ingest, build, score, rebuild under load, auth,
limits."""

import csv
import json
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import ROOT

TOKEN = {"Authorization": "Bearer test-token"}
PAPERS = ROOT / "data" / "papers.jsonl"


def wait_job(url: str, job: dict, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = httpx.get(f"{url}/v1/jobs/{job['id']}").json()
        if state["status"] in ("succeeded", "failed"):
            return state
        time.sleep(0.3)
    raise AssertionError(f"job {job['id']} did not finish")


def upload(url: str, name: str, data: bytes, headers=TOKEN, **params) -> httpx.Response:
    return httpx.post(f"{url}/v1/papers", files={"file": (name, data)}, headers=headers, params=params, timeout=60)


def close_idea() -> tuple[dict, str]:
    """An idea from the sample whose target paper is known."""
    targets = {r["idea_id"]: r["paper_id"] for r in csv.DictReader((ROOT / "data/ideas/targets.csv").open())}
    for line in (ROOT / "data/ideas/sample.jsonl").read_text().splitlines():
        idea = json.loads(line)
        if targets.get(idea["id"]):
            return idea, targets[idea["id"]]
    raise AssertionError("no close idea in the sample")


@pytest.fixture(scope="module")
def corpus() -> tuple[bytes, bytes, set[str]]:
    """The sample corpus split in two parts, the first holding the close idea's target paper."""
    lines = PAPERS.read_text().splitlines()
    _, target = close_idea()
    first = ([line for line in lines if json.loads(line)["id"] == target]
             + [line for line in lines if json.loads(line)["id"] != target][:59])
    rest = [line for line in lines if line not in first][:20]
    ids = {json.loads(line)["id"] for line in first}
    return "\n".join(first).encode() + b"\n", "\n".join(rest).encode() + b"\n", ids


def test_full_flow(tmp_path: Path, server_factory, corpus):
    first, second, first_ids = corpus
    srv = server_factory(tmp_path / "home", env={"HINDSIGHT_MAX_IDEAS_PER_REQUEST": "8",
                                                 "HINDSIGHT_MAX_TEXT_CHARS": "3000",
                                                 "HINDSIGHT_MAX_UPLOAD_BYTES": "200000"})
    url = srv.url
    ready = httpx.get(f"{url}/readyz")
    assert ready.status_code == 503 and "hindsight index build" in ready.json()["reason"]

    # auth on mutating endpoints
    assert upload(url, "p.jsonl", first, headers={}).status_code == 401
    assert upload(url, "p.jsonl", first, headers={"Authorization": "Bearer nope"}).status_code == 403
    assert httpx.post(f"{url}/v1/index/rebuild", headers={"Authorization": "Bearer nope"}).status_code == 403

    # a bad file writes nothing and names the line and field
    bad = first + b'{"id": "broken", "title": "", "year": 2024}\n'
    r = upload(url, "bad.jsonl", bad)
    assert r.status_code == 422
    err = r.json()["detail"]["errors"][0]
    assert (err["line"], err["field"]) == (61, "title")
    some_id = next(iter(first_ids))
    assert httpx.get(f"{url}/v1/papers/{some_id}").status_code == 404

    # ingest and build
    r = upload(url, "papers.jsonl", first)
    assert r.status_code == 200 and r.json()["inserted"] == 60
    assert httpx.get(f"{url}/v1/papers/{some_id}").json()["paper_id"] == some_id
    job = httpx.post(f"{url}/v1/index/rebuild", headers=TOKEN).json()
    done = wait_job(url, job)
    assert done["status"] == "succeeded", done
    v1 = done["result"]["version"]
    assert httpx.get(f"{url}/readyz").status_code == 200
    manifest = httpx.get(f"{url}/v1/index").json()["manifest"]
    assert manifest["version"] == v1 and manifest["model"] == "minilm"
    assert manifest["counts"]["indexed"] + manifest["counts"]["excluded_before_cutoff"] + \
        manifest["counts"]["excluded_after_window"] == 60

    # score: the close idea finds its paper first; every answer names model, theta, version, cutoff, window
    idea, target = close_idea()
    far = {"id": "far-1", "problem": "Brewing coffee tastes bitter when water is too hot.",
           "method": "Measure extraction at several temperatures with a refractometer."}
    body = {"system": "e2e", "run": "r1", "ideas": [idea, far]}
    r = httpx.post(f"{url}/v1/score", json=body, timeout=120)
    assert r.status_code == 200, r.text
    out = r.json()
    for key in ("model", "theta", "index_version", "cutoff", "window"):
        assert out[key] is not None
    assert out["index_version"] == v1 and out["theta"] == manifest["theta"]
    got = {i["id"]: i for i in out["ideas"]}
    assert got[idea["id"]]["matches"][0]["paper_id"] == target
    assert got[idea["id"]]["matched"] and got[idea["id"]]["score"] == max(
        m["impact"] for m in got[idea["id"]]["matches"] if m["above_threshold"])
    assert not got["far-1"]["matched"] and got["far-1"]["score"] == 0.0
    runs = httpx.get(f"{url}/v1/runs").json()
    assert [(r["system"], r["label"], r["ideas"]) for r in runs] == [("e2e", "r1", 2)]
    stored = httpx.get(f"{url}/v1/runs/r1/scores").json()["scores"]
    assert {s["id"]: s["score"] for s in stored} == {i["id"]: i["score"] for i in out["ideas"]}

    # limits
    many = {"ideas": [{"id": str(i), "text": "x"} for i in range(9)]}
    r = httpx.post(f"{url}/v1/score", json=many)
    assert r.status_code == 413 and "8 per request" in r.json()["detail"]
    r = httpx.post(f"{url}/v1/score", json={"ideas": [{"id": "long", "problem": "x" * 3001}]})
    assert r.status_code == 422 and "ideas[0].problem" in r.json()["detail"] and "3000" in r.json()["detail"]
    r = httpx.post(f"{url}/v1/score", json={"ideas": [{"id": "empty"}]})
    assert r.status_code == 422
    r = upload(url, "huge.jsonl", b" " * 300_000)
    assert r.status_code == 413 and "200000" in r.json()["detail"]

    # rebuild while scoring requests run: none fails, each names a version that existed
    assert upload(url, "more.jsonl", second).status_code == 200
    results: list[tuple[int, str | None]] = []
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                resp = client.post(f"{url}/v1/score", json={"system": "e2e", "run": "load", "ideas": [idea]})
                ok = resp.status_code == 200
                results.append((resp.status_code, resp.json().get("index_version") if ok else resp.text))

    worker = threading.Thread(target=load)
    worker.start()
    try:
        done = wait_job(url, httpx.post(f"{url}/v1/index/rebuild", headers=TOKEN).json())
    finally:
        stop.set()
        worker.join(60)
    assert done["status"] == "succeeded", done
    v2 = done["result"]["version"]
    assert v2 != v1 and done["result"]["counts"]["embedded_from_cache"] >= 1  # only new papers were embedded
    assert results and all(code == 200 for code, _ in results), results[:3]
    assert {v for _, v in results} <= {v1, v2}
    after = httpx.post(f"{url}/v1/score", json={"system": "e2e", "run": "load", "ideas": [idea]}, timeout=60)
    assert after.json()["index_version"] == v2  # picked up without a restart
    assert httpx.get(f"{url}/v1/index").json()["manifest"]["version"] == v2


def test_admin_disabled_without_token(tmp_path: Path, server_factory):
    srv = server_factory(tmp_path / "home", token=None)
    r = upload(srv.url, "p.jsonl", b"{}\n")
    assert r.status_code == 403 and "disabled" in r.json()["detail"]
    assert httpx.get(f"{srv.url}/healthz").json() == {"status": "ok"}
