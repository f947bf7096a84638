"""The OpenAPI document tells the truth: `st run --checks all` over every operation of the real server, in the
demo's state (sample papers, an index, two scored systems, judge scores), finds 0 failures of any kind:
undocumented status codes or media types, answers that break their schema, schema-valid requests refused,
schema-invalid ones accepted, a wrong Allow header, auth ignored."""

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from indexing.build import build_index
from indexing.db import migrate
from indexing.ingest import ingest_path
from indexing.settings import Settings
from tests.helpers import ROOT, free_port
from tests.reliability.helpers import SEED, TOKEN, TOKEN_VALUE, scale, write_report

ST = Path(sys.executable).with_name("st")
CONFIG = ROOT / "tests" / "schemathesis.toml"
EXAMPLES = scale(8, 60)


def ideas(name: str) -> list[dict]:
    return [json.loads(line) for line in (ROOT / "data" / "ideas" / name).read_text().splitlines() if line.strip()]


@pytest.mark.skipif(not ST.exists(), reason="schemathesis CLI not installed")
def test_schemathesis_all_checks_every_operation(tmp_path, live_server, minilm):
    settings = Settings(home=tmp_path / "home")
    migrate(settings.db_path)
    ingest_path(ROOT / "data" / "papers.jsonl", db_path=settings.db_path)
    build_index(settings, embedder=minilm)
    # the fetch and refresh jobs it starts must fail fast on a closed loopback port, not reach (or wait on) the APIs;
    # the verification jobs likewise on a model file that is not there (202, then a failed job), not load the
    # packaged model and read every stored run with it on a shared machine
    closed = f"http://127.0.0.1:{free_port()}"
    server = live_server(settings.home, env={"HINDSIGHT_OPENALEX_URL": closed, "HINDSIGHT_S2_URL": closed,
                                             "HINDSIGHT_FETCH_ATTEMPTS": "1", "HINDSIGHT_FETCH_TIMEOUT": "5",
                                             "HINDSIGHT_VERIFIER_MODEL_PATH": str(tmp_path / "no-model.gguf")})
    for system, name in (("rag", "rag.jsonl"), ("vanilla", "vanilla.jsonl")):
        r = httpx.post(f"{server.url}/v1/score", json={"system": system, "run": "r1", "ideas": ideas(name)},
                       timeout=300)
        assert r.status_code == 200, r.text
    r = httpx.post(f"{server.url}/v1/judge-scores", headers=TOKEN, timeout=60,
                   files={"file": ("judge_scores.csv", (ROOT / "data" / "judge_scores.csv").read_bytes())})
    assert r.status_code == 200, r.text
    # draw 1: every rag idea (the hooks' sheet names one)
    r = httpx.post(f"{server.url}/v1/labels/draws", headers=TOKEN, timeout=60,
                   json={"run": "r1", "system": "rag", "n": 1000, "seed": 1})
    assert r.status_code == 201 and r.json()["draws"][0]["draw"] == 1, r.text

    for bad in ({"until": 0}, {"cutoff": 20230601}, {"until": "2024-02-30"}, {"model": "bert"}, {"extra": 1}):
        r = httpx.post(f"{server.url}/v1/index/rebuild", json=bad, headers=TOKEN, timeout=30)
        assert r.status_code == 422 and isinstance(r.json()["detail"], list), (bad, r.status_code, r.text)

    command = [str(ST), "--config-file", str(CONFIG), "--no-color", "run", f"{server.url}/openapi.json",
               "--checks", "all", "--max-examples", str(EXAMPLES), "--header", f"Authorization: Bearer {TOKEN_VALUE}",
               "--generation-database", "none", "--workers", "1", "--request-timeout", "120",
               "--report", "json", "--report-dir", str(tmp_path / "report"),
               "--seed", str(SEED)]
    out = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=scale(600, 3600),
                         env={**os.environ, "NO_COLOR": "1",  # the hooks module lives in tests/
                              "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
    summary = out.stdout[out.stdout.rfind("SUMMARY"):] if "SUMMARY" in out.stdout else out.stdout[-3000:]
    write_report("openapi_contract", {"examples_per_operation": EXAMPLES, "exit": out.returncode,
                                      "summary": summary.strip().splitlines()[-12:]})
    assert "Selected: " in out.stdout and "Tested: " in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]
    assert out.returncode == 0, out.stdout[-8000:] + out.stderr[-2000:]
    assert "server errors" not in out.stdout.lower()
    assert "failure" not in summary.lower().replace("0 failures", ""), summary
