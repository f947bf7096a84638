"""Verifying a stored run end to end: `hindsight verify` and the HTTP job, with the openai verifier talking to a
real loopback server that replays recorded chat replies; every verdict cached, a stopped run resumed."""

import time

import httpx
import pytest

from tests.factories import sample_version
from tests.helpers import ROOT, run_cli
from tests.replay_server import Replay, chat_by_question

pytestmark = pytest.mark.server

IDEAS = ROOT / "data" / "ideas" / "rag.jsonl"  # 12 ideas
TOP = 2
# direction: "Yes" at P 0.9985; realised: "No" (P(Yes) 0.12): the uncalibrated rule reads them at 0.5
ANSWERS = ("openai_logprobs_yes.json", "vllm_logprobs_no.json")


@pytest.fixture
def chat(replay) -> Replay:
    return replay(chat=chat_by_question(*ANSWERS))


def env_for(replay: Replay, **extra: str) -> dict[str, str]:
    return {"HINDSIGHT_VERIFIER_URL": f"{replay.url}/v1", "HINDSIGHT_VERIFIER_MODEL": "test-model",
            "HINDSIGHT_VERIFIER_BACKOFF_MIN": "0.01", "HINDSIGHT_VERIFIER_BACKOFF_MAX": "0.05", **extra}


def scored_home(tmp_path, minilm):
    home = tmp_path / "home"
    sample_version(home, minilm, 80)
    done = run_cli(home, "score", str(IDEAS), "--system", "rag", "--run", "r1", "--verifier", "none", "--json")
    assert done.returncode == 0, done.stderr
    return home


def verify(home, replay, *args: str, **extra: str):
    return run_cli(home, "verify", "--run", "r1", "--verifier", "openai", "--top", str(TOP), "--json", *args,
                   env=env_for(replay, **extra))


def test_cli_verify_decides_the_top_k_keeps_the_embedding_decision_and_a_second_run_asks_nothing(
        tmp_path, minilm, chat, server_factory):
    import json

    home = scored_home(tmp_path, minilm)
    first = verify(home, chat)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["verified"] == report["ideas"] == 12 and report["skipped"] == report["left"] == 0
    assert report["new_calls"] == 12 * TOP and report["cached"] == 0
    assert len(chat.requests("v1/chat/completions")) == 12 * TOP * 2  # two questions per pair
    assert report["realised_after"] == 0 and report["direction_after"] == 12
    assert report["thresholds"]["calibrated"] is False

    second = verify(home, chat)
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["new_calls"] == 0 and again["cached"] == 12 * TOP
    assert len(chat.requests("v1/chat/completions")) == 12 * TOP * 2  # nothing new reached the endpoint

    server = server_factory(home)
    scores = httpx.get(f"{server.url}/v1/runs/r1/scores", timeout=30).json()["scores"]
    for s in scores:
        assert s["verifier"].startswith("openai:test-model@127.0.0.1:") and s["verifier_top_k"] == TOP
        assert s["score"] == 0.0 and not s["matched"] and s["n_direction_matches"] == TOP
        assert s["embedding_n_matches"] is not None and s["embedding_score"] is not None
        read, unread = s["matches"][:TOP], s["matches"][TOP:]
        assert all(m["verifier"]["source"] == "logprobs" and m["verifier"]["p_direction"] > 0.99 for m in read)
        assert all(m["direction"] and not m["realised"] for m in read)
        assert all(m["verifier"] is None and not m["direction"] and not m["above_threshold"] for m in unread)
        assert all(m["embedding_realised"] is not None for m in s["matches"])
    # the embedding-only score is the one stored before verification
    assert any(s["embedding_score"] > 0 for s in scores)


def test_a_run_stopped_by_its_budget_resumes_without_asking_twice(tmp_path, minilm, chat):
    import json

    home = scored_home(tmp_path, minilm)
    stopped = verify(home, chat, HINDSIGHT_VERIFIER_BUDGET=str(5 * TOP * 2))  # five ideas' worth of requests
    assert stopped.returncode == 3, stopped.stderr
    assert "rerun to resume" in stopped.stderr
    partial = json.loads(stopped.stdout)
    assert partial["verified"] == 5 and partial["left"] == 7 and partial["stopped"]
    resumed = verify(home, chat)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["new_calls"] == 7 * TOP and report["cached"] == 5 * TOP
    assert len(chat.requests("v1/chat/completions")) == 12 * TOP * 2  # every pair asked exactly once over both runs


def test_http_verification_is_a_job_with_progress(tmp_path, minilm, chat, server_factory):
    home = scored_home(tmp_path, minilm)
    server = server_factory(home, env=env_for(chat))
    auth = {"Authorization": "Bearer test-token"}
    assert httpx.post(f"{server.url}/v1/runs/r1/verify", json={"verifier": "openai"}, timeout=30).status_code == 401
    started = httpx.post(f"{server.url}/v1/runs/r1/verify", json={"verifier": "openai", "top_k": TOP}, headers=auth,
                         timeout=30)
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 120
    state = started.json()
    while state["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.2)
        state = httpx.get(f"{server.url}/v1/runs/r1/verify", timeout=30).json()
    assert state["status"] == "succeeded", state
    assert state["progress"] == {"stage": "verify", "done": 12, "total": 12}
    assert state["result"]["new_calls"] == 12 * TOP
    assert httpx.get(f"{server.url}/v1/runs/nope/verify", timeout=30).status_code == 404


def test_cli_verify_takes_a_run_label_two_systems_share(tmp_path, minilm, chat):
    """issue 42: every command taking --run reads a label shared by two systems alike: each system's run, or one
    with --system."""
    import json

    home = scored_home(tmp_path, minilm)
    done = run_cli(home, "score", str(IDEAS), "--system", "vanilla", "--run", "r1", "--verifier", "none", "--json")
    assert done.returncode == 0, done.stderr
    one = verify(home, chat, "--system", "vanilla")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["verified"] == 12 and json.loads(one.stdout)["new_calls"] == 12 * TOP
    both = verify(home, chat)
    assert both.returncode == 0, both.stderr
    runs = json.loads(both.stdout)["runs"]
    assert [r["verified"] for r in runs] == [12, 12] and len({r["run_id"] for r in runs}) == 2
    assert sum(r["new_calls"] for r in runs) == 0  # the same pairs: every verdict from the cache
