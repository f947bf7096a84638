"""The judge end to end: `hindsight judge run|export|audit` as processes and the HTTP job on the real server, the
openai backend talking to a loopback server that replays judge replies; the analyses take the judge by name."""

import json
import shutil
import time

import httpx
import pytest

from service.llm_judge import prompts
from tests.factories import sample_version
from tests.helpers import FIXTURES, ROOT, run_cli
from tests.replay_server import Replay

pytestmark = pytest.mark.server

IDEAS = ROOT / "data" / "ideas" / "rag.jsonl"  # 12 ideas
JUDGE = FIXTURES / "judge"


def answers(body: dict) -> bytes:
    """paper-v1: novelty 7 (logprobs), feasibility 12 (invalid), impact 8 (text), overall "1","0" (logprobs);
    reviewers-v1: 8 as text for everything."""
    asked = body["messages"][-1]["content"]
    by_question = {prompts.PAPER_V1.rate["novelty"]: "rating_logprobs_7.json",
                   prompts.PAPER_V1.rate["feasibility"]: "rating_text_12.json",
                   prompts.PAPER_V1.rate["impact"]: "rating_text_8.json",
                   prompts.PAPER_V1.rate["overall"]: "rating_logprobs_split_10.json"}
    name = next((n for q, n in by_question.items() if asked.endswith(q)), "rating_text_8.json")
    return (JUDGE / name).read_bytes()


@pytest.fixture
def chat(replay) -> Replay:
    return replay(chat=answers)


def env_for(replay: Replay) -> dict[str, str]:
    return {"HINDSIGHT_JUDGE_URL": f"{replay.url}/v1", "HINDSIGHT_JUDGE_MODEL": "judge-model",
            "HINDSIGHT_VERIFIER_BACKOFF_MIN": "0.01", "HINDSIGHT_VERIFIER_BACKOFF_MAX": "0.05"}


@pytest.fixture(scope="module")
def scored(tmp_path_factory, minilm):
    """A home with the 12 ideas scored, built once; each test judges a copy."""
    home = tmp_path_factory.mktemp("judging") / "home"
    sample_version(home, minilm, 80)
    done = run_cli(home, "score", str(IDEAS), "--system", "rag", "--run", "r1", "--verifier", "none", "--json")
    assert done.returncode == 0, done.stderr
    return home


def scored_home(tmp_path, scored):
    home = tmp_path / "home"
    shutil.copytree(scored, home)
    return home


def cli(home, chat, *args: str):
    done = run_cli(home, "judge", *args, env=env_for(chat))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in args else done


def test_cli_judges_exports_audits_and_the_analyses_take_the_judge_by_name(tmp_path, scored, chat):
    home = scored_home(tmp_path, scored)
    listed = cli(home, chat, "prompts", "--json")
    assert [p["name"] for p in listed] == ["paper-v1", "reviewers-v1"] and listed[0]["default"]

    first = cli(home, chat, "run", "--run", "r1", "--backend", "openai", "--json")
    assert first["judge"] == "judge-model@paper-v1" and first["ideas"] == 12 and first["new_calls"] == 48
    assert first["invalid"] == {"novelty": 0, "feasibility": 12, "impact": 0, "overall": 0}
    again = cli(home, chat, "run", "--run", "r1", "--backend", "openai", "--json")
    assert again["new_calls"] == 0 and again["cached"] == 48 and again["invalid"] == first["invalid"]
    assert len(chat.requests("v1/chat/completions")) == 48

    other = cli(home, chat, "run", "--run", "r1", "--backend", "openai", "--prompt", "reviewers-v1", "--json")
    assert other["judge"] == "judge-model@reviewers-v1" and other["new_calls"] == 48

    out = tmp_path / "scores.jsonl"
    cli(home, chat, "export", "--run", "r1", "--judge", first["judge"], "--out", str(out), "--json")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 12 and all("feasibility" not in r for r in rows)
    back = cli(home, chat, "import", str(out), "--json")
    assert back["unchanged"] == 12 and back["inserted"] == back["updated"] == 0

    audited = cli(home, chat, "audit", "--judge", first["judge"], "--judge", other["judge"], "--run", "r1",
                  "--json")
    assert audited["cut"] == 6.0
    # novelty 7.2 vs 8 and overall 9.0 vs 8: no verdict changes at 6; impact 8 vs 8; feasibility invalid on a
    nov = audited["dimensions"]["novelty"]
    assert (nov["n_compared"], nov["flips"], nov["flip_rate"]) == (12, 0, 0.0)
    feas = audited["dimensions"]["feasibility"]
    assert feas["invalid"] == {"a": 12, "b": 0} and feas["n_compared"] == 0 and feas["flip_rate"] is None
    assert audited["revisions"]["a"]["prompt"] == "paper-v1" and audited["revisions"]["b"]["prompt"] == "reviewers-v1"
    strict = cli(home, chat, "audit", "--judge", first["judge"], "--judge", other["judge"], "--cut", "8.5", "--json")
    assert strict["dimensions"]["overall"]["flips"] == 12  # 9.0 >= 8.5 against 8 < 8.5, on every idea
    assert strict["dimensions"]["novelty"]["flips"] == 0  # 7.2 and 8: both under 8.5
    # the audit's flips against a count made from the two exported files
    out_b = tmp_path / "b.jsonl"
    cli(home, chat, "export", "--run", "r1", "--judge", other["judge"], "--out", str(out_b), "--json")
    a = {r["idea_id"]: r for r in rows}
    b = {r["idea_id"]: r for r in (json.loads(line) for line in out_b.read_text().splitlines())}
    for dim in ("novelty", "impact", "overall"):
        counted = sum((a[i][dim] >= 8.5) != (b[i][dim] >= 8.5) for i in a if dim in a[i] and dim in b.get(i, {}))
        assert strict["dimensions"][dim]["flips"] == counted

    ids = [r["idea_id"] for r in rows]
    pairs_file = tmp_path / "pairs.jsonl"
    pairs_file.write_text("".join(json.dumps({"a": x, "b": y}) + "\n" for x, y in zip(ids[:2], ids[2:4])))
    pairs = cli(home, chat, "pairs", "--run", "r1", "--pairs", str(pairs_file), "--backend", "openai", "--json")
    # the replayed endpoint answers "8" to "which idea": no letter, so every answer is invalid, and counted
    assert (pairs["pairs"], pairs["new_calls"], pairs["invalid"], pairs["invalid_answers"]) == (2, 4, 2, 4)
    assert pairs["swap_compared"] == 0 and pairs["swap_flip_rate"] is None

    for kind in ("quadrants", "correlations"):
        for name in (first["judge"], other["judge"]):
            done = run_cli(home, "analyze", kind, "--judge", name, "--json")
            assert done.returncode == 0, done.stderr


def test_http_judging_is_a_job_with_progress(tmp_path, scored, chat, server_factory):
    home = scored_home(tmp_path, scored)
    server = server_factory(home, env=env_for(chat))
    auth = {"Authorization": "Bearer test-token"}
    assert httpx.post(f"{server.url}/v1/runs/r1/llm-judge", json={"backend": "openai"}, timeout=30).status_code == 401
    bad = httpx.post(f"{server.url}/v1/runs/r1/llm-judge", json={"backend": "openai", "prompt": "nope"}, headers=auth,
                     timeout=30)
    assert bad.status_code == 422
    started = httpx.post(f"{server.url}/v1/runs/r1/llm-judge", json={"backend": "openai"}, headers=auth, timeout=30)
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 120
    state = started.json()
    while state["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.2)
        state = httpx.get(f"{server.url}/v1/runs/r1/llm-judge", timeout=30).json()
    assert state["status"] == "succeeded", state
    assert state["progress"] == {"stage": "judge", "done": 12, "total": 12}
    assert state["result"]["judge"] == "judge-model@paper-v1" and state["result"]["new_calls"] == 48
    revisions = httpx.get(f"{server.url}/v1/llm-judge/revisions", timeout=30).json()
    assert [(r["name"], r["invalid"]) for r in revisions] == [("judge-model@paper-v1", 12)]
    assert [p["name"] for p in httpx.get(f"{server.url}/v1/llm-judge/prompts", timeout=30).json()] == [
        "paper-v1", "reviewers-v1"]
    assert httpx.get(f"{server.url}/v1/llm-judge/audit", params={"judge": ["judge-model@paper-v1", "x"]},
                     timeout=30).status_code == 404
    assert httpx.get(f"{server.url}/v1/runs/nope/llm-judge", timeout=30).status_code == 404


def test_a_run_label_two_systems_share_is_taken_by_judge_run_export_and_audit(tmp_path, scored, chat, server_factory):
    """issue 42: `judge run --run L` and `judge audit --run L` refused a label two systems share with a query-string
    hint; now they take both systems' runs (or one with --system), and a command that needs one run names
    --system on the command line and ?system= over HTTP."""
    home = scored_home(tmp_path, scored)
    done = run_cli(home, "score", str(IDEAS), "--system", "vanilla", "--run", "r1", "--verifier", "none", "--json")
    assert done.returncode == 0, done.stderr
    both = cli(home, chat, "run", "--run", "r1", "--backend", "openai", "--json")["runs"]
    assert [(r["ideas"], r["judged"]) for r in both] == [(12, 12), (12, 12)]
    assert len({r["run_id"] for r in both}) == 2
    assert sum(r["new_calls"] for r in both) == 48  # the same texts: the second run's answers come from the cache
    one = cli(home, chat, "run", "--run", "r1", "--system", "vanilla", "--backend", "openai", "--prompt",
              "reviewers-v1", "--json")
    assert one["ideas"] == 12 and one["new_calls"] == 48
    cli(home, chat, "run", "--run", "r1", "--system", "rag", "--backend", "openai", "--prompt", "reviewers-v1")
    a, b = both[0]["judge"], one["judge"]
    audited = cli(home, chat, "audit", "--judge", a, "--judge", b, "--run", "r1", "--json")
    assert audited["ideas"] == 24
    only = cli(home, chat, "audit", "--judge", a, "--judge", b, "--run", "r1", "--system", "rag", "--json")
    assert only["ideas"] == 12
    out = tmp_path / "a.jsonl"
    cli(home, chat, "export", "--run", "r1", "--judge", a, "--out", str(out))
    assert len(out.read_text().splitlines()) == 24
    pairs_file = tmp_path / "pairs.jsonl"
    pairs_file.write_text(json.dumps({"a": "x", "b": "y"}) + "\n")
    refused = run_cli(home, "judge", "pairs", "--run", "r1", "--pairs", str(pairs_file), env=env_for(chat))
    assert refused.returncode == 2
    assert "--system SYSTEM" in refused.stderr and "?system" not in refused.stderr
    server = server_factory(home, env=env_for(chat))
    answer = httpx.get(f"{server.url}/v1/runs/r1/scores", timeout=30)
    assert answer.status_code == 404 and "?system=" in answer.json()["detail"] and "--system" not in answer.text
