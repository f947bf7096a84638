"""Model inference of the server's jobs runs in a worker process: it answers as the model in process does, and a
worker that dies (a real SIGSEGV, as llama.cpp's AMX path gives) is an error naming the signal; on the real server a
judge job whose model process is killed fails with that error while /healthz answers throughout."""

import importlib.util
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from indexing.llm import ModelUnavailable
from indexing.settings import Settings
from service.llm_judge import prompts
from tests.factories import sample_version
from tests.helpers import ROOT, run_cli

pytestmark = [pytest.mark.server,  # worker processes, llama.cpp, uvicorn
              pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                                 reason="llama-cpp-python is not installed (the `verifier` extra)")]

RATE = prompts.PAPER_V1.tasks["rate"]
QUESTIONS = [prompts.PAPER_V1.rate[d] for d in prompts.DIMENSIONS]
IDEA = prompts.rate_prefix("Problem: models forget.\nMethod: replay a buffer.")


def local_settings(home: Path, model: Path) -> Settings:
    return Settings(home=home, llm={"verifier_model_path": model, "verifier_threads": 1})


def test_the_judge_in_a_worker_answers_as_in_process_and_its_death_is_an_error(tiny_model, tmp_path):
    from service.llm_judge.backends import JudgeProcess, LocalJudge

    settings = local_settings(tmp_path, tiny_model)
    here = LocalJudge.from_settings(settings)
    worker = JudgeProcess(settings)
    try:
        assert worker.pid != os.getpid() and (worker.model, worker.weights) == (here.model, here.weights)
        got, want = worker.ask(RATE, IDEA, QUESTIONS), here.ask(RATE, IDEA, QUESTIONS)
        assert [r.label for r in got] == [r.label for r in want]
        assert [list(r.probs.values()) for r in got] == [pytest.approx(list(r.probs.values()), abs=1e-6)
                                                         for r in want]
        assert worker.calls == len(QUESTIONS)
        os.kill(worker.pid, signal.SIGSEGV)
        with pytest.raises(ModelUnavailable, match=r"the local judge \(pid \d+\) died with SIGSEGV while ask"):
            worker.ask(RATE, IDEA, QUESTIONS)
    finally:
        worker.close()


def test_the_verifier_in_a_worker_answers_as_in_process(tiny_model, tmp_path):
    from indexing.matcher.verifier.base import Paper
    from indexing.matcher.verifier.local import LocalVerifier, VerifierProcess

    settings = local_settings(tmp_path, tiny_model)
    papers = [Paper("p1", "Replay buffers against forgetting", "We replay stored samples."),
              Paper("p2", "Legged robots", "A controller for stairs.")]
    here = LocalVerifier.from_settings(settings)
    worker = VerifierProcess(settings)
    try:
        assert worker.revision == here.revision
        got, want = worker.judge("Problem: models forget.", papers), here.judge("Problem: models forget.", papers)
        assert [(v.p_direction, v.p_realised) for v in got] == [
            (pytest.approx(v.p_direction, abs=1e-6), pytest.approx(v.p_realised, abs=1e-6)) for v in want]
    finally:
        worker.close()
    with pytest.raises(ModelUnavailable, match="nothing.gguf is not a file"):  # answered before a worker starts
        VerifierProcess(local_settings(tmp_path, tmp_path / "nothing.gguf"))


def model_processes(parent: int) -> list[int]:
    """The worker processes (multiprocessing's spawned interpreters) whose parent is `parent`."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and b"spawn_main" in cmdline:
            out.append(int(entry.name))
    return out


def test_a_judge_job_whose_model_process_dies_fails_and_the_server_keeps_serving(tmp_path, minilm, tiny_model,
                                                                                 server_factory):
    home = tmp_path / "home"
    sample_version(home, minilm, 80)
    done = run_cli(home, "score", str(ROOT / "data" / "ideas" / "rag.jsonl"), "--system", "rag", "--run", "r1",
                   "--verifier", "none", "--json")
    assert done.returncode == 0, done.stderr
    server = server_factory(home, env={"HINDSIGHT_VERIFIER_MODEL_PATH": str(tiny_model),
                                       "HINDSIGHT_VERIFIER_THREADS": "1"})
    auth = {"Authorization": "Bearer test-token"}
    health: list[int | str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                health.append(httpx.get(f"{server.url}/healthz", timeout=5).status_code)
            except httpx.HTTPError as exc:
                health.append(repr(exc))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        started = httpx.post(f"{server.url}/v1/runs/r1/llm-judge", json={"backend": "local"}, headers=auth, timeout=30)
        assert started.status_code == 202, started.text
        deadline = time.monotonic() + 120
        while not (workers := model_processes(server.proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert workers, "no model process started"
        os.kill(workers[0], signal.SIGSEGV)
        state = started.json()
        while state["status"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.1)
            state = httpx.get(f"{server.url}/v1/runs/r1/llm-judge", timeout=30).json()
        assert state["status"] == "failed" and f"(pid {workers[0]}) died with SIGSEGV" in state["error"], state
        assert server.proc.poll() is None
        # the next job gets a fresh worker and judges the run to the end
        again = httpx.post(f"{server.url}/v1/runs/r1/llm-judge", json={"backend": "local"}, headers=auth, timeout=30)
        assert again.status_code == 202, again.text
        state = again.json()
        while state["status"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(0.1)
            state = httpx.get(f"{server.url}/v1/runs/r1/llm-judge", timeout=30).json()
        assert state["status"] == "succeeded" and state["result"]["ideas"] == 12, state
    finally:
        stop.set()
        watcher.join()
    assert len(health) > 10 and set(health) == {200}, health
    assert not model_processes(server.proc.pid)  # each job's worker ends with it
