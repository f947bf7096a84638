"""A Qdrant build through the CLI, served over HTTP: the FAISS build's answers, its outages as 503s.

Local mode here (its folder locks to one process: the CLI builds, then one server serves). The server-only part
(two API processes on one collection, an outage mid-request) runs where HINDSIGHT_QDRANT_URL names a reachable
Qdrant server and is skipped, saying so, elsewhere.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytest.importorskip("qdrant_client", reason="qdrant-client is the optional `scale` extra")

from tests.helpers import ROOT, Server  # noqa: E402

pytestmark = pytest.mark.server  # CLI subprocesses and a real server

CUTOFFS = ("2023-06-01", "2024-06-01")  # the built window, and a later per-request cutoff (an id-range filter)
MATCHERS = ("dense", "hybrid")


def cli(home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    full |= {"HINDSIGHT_HOME": str(home), "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "service.cli", *args], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=600)


def ideas() -> list[dict]:
    lines = (ROOT / "data/ideas/sample.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()][:8]


def answers(url: str, run: str) -> dict:
    """Per (matcher, cutoff): the index version and, per idea, its score and its matches' ids and numbers."""
    out = {}
    for matcher in MATCHERS:
        for cutoff in CUTOFFS:
            r = httpx.post(f"{url}/v1/score", timeout=300, json={
                "system": "e2e", "run": f"{run}-{matcher}-{cutoff}", "ideas": ideas(), "top_k": 20,
                "cutoff": cutoff, "matcher": matcher})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["cutoff"] == cutoff
            out[(matcher, cutoff)] = {"version": body["index_version"], "ideas": {
                i["id"]: {"score": i["score"], "matches": {m["paper_id"]: (m["similarity"], m["impact"],
                                                                           m.get("p_realised"))
                                                           for m in i["matches"]}} for i in body["ideas"]}}
    return out


def assert_same(qdrant: dict, faiss: dict) -> None:
    for key in qdrant:
        q, f = qdrant[key]["ideas"], faiss[key]["ideas"]
        assert q.keys() == f.keys()
        for idea in q:
            assert q[idea]["matches"].keys() == f[idea]["matches"].keys(), (key, idea)  # the same top-20 set
            assert q[idea]["score"] == pytest.approx(f[idea]["score"], abs=1e-6)
            for paper, (sim, impact, p_real) in q[idea]["matches"].items():
                f_sim, f_impact, f_real = f[idea]["matches"][paper]
                assert sim == pytest.approx(f_sim, abs=1e-5) and impact == pytest.approx(f_impact, abs=1e-9)
                assert (p_real is None) == (f_real is None)
                if p_real is not None:
                    assert p_real == pytest.approx(f_real, abs=1e-4)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("qdrant-e2e") / "home"
    ingest = cli(home, "ingest", str(ROOT / "data/papers.jsonl"), "--json")
    assert ingest.returncode == 0, ingest.stderr
    built = cli(home, "index", "build", "--backend", "qdrant", "--json")
    assert built.returncode == 0, built.stderr
    spec = json.loads(built.stdout)["manifest"]["index"]
    assert spec["kind"] == "qdrant" and spec["collection"] == "hindsight-v0001" and spec["local"] == "qdrant"
    assert json.loads(built.stdout)["manifest"]["matcher"]["default"] == "hybrid"
    built = cli(home, "index", "build", "--json")  # the same papers into FAISS: v0002, current
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["manifest"]["index"]["kind"] == "faiss:IDMap2,Flat"
    return home


def test_a_qdrant_build_answers_as_the_faiss_build_and_its_outages_are_503(home, tmp_path):
    server = Server(home)
    try:
        faiss_answers = answers(server.url, "faiss")
        assert {a["version"] for a in faiss_answers.values()} == {"v0002"}

        use = cli(home, "index", "use", "v0001")  # a rollback onto the Qdrant version flips its alias too
        assert use.returncode == 0, use.stderr
        ready = httpx.get(f"{server.url}/readyz").json()
        assert ready["status"] == "ready" and ready["loaded_version"] == "v0001"
        assert ready["index"] == {"kind": "qdrant", "collection": "hindsight-v0001", "alias": "hindsight-current",
                                  "local": "qdrant", "alias_target": "hindsight-v0001"}
        qdrant_answers = answers(server.url, "qdrant")
        assert {a["version"] for a in qdrant_answers.values()} == {"v0001"}
        assert_same(qdrant_answers, faiss_answers)
        narrower = qdrant_answers[("dense", "2024-06-01")]["ideas"]
        assert any(len(i["matches"]) for i in narrower.values())

        # local mode: the server holds the folder, so a second process is refused with the reason
        status = cli(home, "index", "status")
        assert status.returncode == 1 and "in use by another process" in status.stderr + status.stdout
        second = Server(home)
        try:
            r = httpx.get(f"{second.url}/readyz")
            assert r.status_code == 503 and "in use by another process" in r.json()["reason"]
            r = httpx.post(f"{second.url}/v1/score", json={"system": "e2e", "run": "locked", "ideas": ideas()[:1]})
            assert r.status_code == 503 and "in use by another process" in r.json()["detail"]
        finally:
            second.stop()

        # the local folder removed under a serving process: 503 with the reason, never a 500; back when restored
        shutil.move(home / "qdrant", tmp_path / "qdrant-away")
        try:
            r = httpx.post(f"{server.url}/v1/score", json={"system": "e2e", "run": "gone", "ideas": ideas()[:1]})
            assert r.status_code == 503 and "removed while serving" in r.json()["detail"], r.text
            r = httpx.get(f"{server.url}/readyz")
            assert r.status_code == 503 and "removed while serving" in r.json()["reason"]
        finally:
            shutil.move(tmp_path / "qdrant-away", home / "qdrant")
        assert httpx.get(f"{server.url}/readyz").status_code == 200
        assert "Traceback" not in server.log_text()
    finally:
        server.stop()


QDRANT_URL = os.environ.get("HINDSIGHT_QDRANT_URL")
needs_server = pytest.mark.skipif(not QDRANT_URL, reason="server-only: set HINDSIGHT_QDRANT_URL to a reachable "
                                                         "Qdrant server (no server can be installed here)")


@needs_server
def test_two_api_processes_share_one_collection_and_a_store_failure_mid_run_is_503(tmp_path):
    from qdrant_client import QdrantClient

    home = tmp_path / "home"
    prefix = f"e2e{os.getpid()}"
    env = {"HINDSIGHT_QDRANT_URL": QDRANT_URL, "HINDSIGHT_QDRANT_PREFIX": prefix,
           "HINDSIGHT_QDRANT_ALIAS": f"{prefix}-current"}
    assert cli(home, "ingest", str(ROOT / "data/papers.jsonl"), env=env).returncode == 0
    built = cli(home, "index", "build", "--backend", "qdrant", "--json", env=env)
    assert built.returncode == 0, built.stderr
    collection = json.loads(built.stdout)["manifest"]["index"]["collection"]
    client = QdrantClient(url=QDRANT_URL)
    one, two = Server(home, env=env), Server(home, env=env)
    try:
        for s in (one, two):
            ready = httpx.get(f"{s.url}/readyz").json()
            assert ready["index"]["collection"] == collection and ready["index"]["alias_target"] == collection
        first, second = answers(one.url, "one"), answers(two.url, "two")
        assert_same(first, second)
        client.delete_collection(collection)  # the store loses the collection while both processes serve it
        for s in (one, two):
            r = httpx.post(f"{s.url}/v1/score", json={"system": "e2e", "run": "lost", "ideas": ideas()[:1]})
            assert r.status_code == 503 and "Qdrant server" in r.json()["detail"], r.text
            assert httpx.get(f"{s.url}/readyz").status_code in (200, 503)
    finally:
        one.stop()
        two.stop()
        for name in [c.name for c in client.get_collections().collections if c.name.startswith(prefix)]:
            client.delete_collection(name)
        client.close()
