"""POST /v1/runs/{run}/verify answers what its schema documents whatever verifier this installation lacks."""

import time

import pytest
from fastapi.testclient import TestClient

from indexing.db import migrate, session_scope
from indexing.models import Run
from indexing.settings import Settings

AUTH = {"Authorization": "Bearer secret"}


@pytest.fixture()
def client(tmp_path):
    settings = Settings(home=tmp_path, service={"admin_token": "secret"})
    migrate(settings.db_path)
    with session_scope(settings.db_path) as session:
        session.add(Run(system="sys", label="r1"))
    from service.app import create_app
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        yield c


def test_a_verifier_this_server_cannot_run_is_a_documented_409(client):
    documented = client.get("/openapi.json").json()["paths"]["/v1/runs/{run}/verify"]["post"]["responses"]
    assert "409" in documented and "503" not in documented and "500" not in documented
    # openai: no endpoint configured (or no backend module installed); a client can ask for it, so never a 5xx
    r = client.post("/v1/runs/r1/verify", json={"verifier": "openai"}, headers=AUTH)
    assert r.status_code == 409 and "openai" in r.json()["detail"].lower(), r.text
    assert client.post("/v1/runs/nope/verify", json={"verifier": "openai"}, headers=AUTH).status_code == 404


def test_the_local_model_is_loaded_by_the_job_not_the_request(tmp_path):
    """Loading the local model takes seconds (its parts are joined on first use): the 202 comes first, and a model
    that cannot load is the job's error, polled with GET."""
    pytest.importorskip("llama_cpp", reason="the local verifier's runtime is not installed")
    settings = Settings(home=tmp_path, service={"admin_token": "secret"},
                        llm={"verifier_model_path": tmp_path / "missing.gguf"})
    migrate(settings.db_path)
    with session_scope(settings.db_path) as session:
        session.add(Run(system="sys", label="r1"))
    from service.app import create_app
    with TestClient(create_app(settings)) as client:
        r = client.post("/v1/runs/r1/verify", json={"verifier": "local"}, headers=AUTH)
        assert r.status_code == 202 and r.json()["status"] in ("queued", "running", "failed"), r.text
        for _ in range(200):
            job = client.get("/v1/runs/r1/verify").json()
            if job["status"] == "failed":
                break
            time.sleep(0.05)
        assert job["status"] == "failed" and "missing.gguf is not a file" in job["error"], job
