"""The first scoring requests and the first API rebuild of a fresh server load the model at the same moment: one
construction at a time per process, so the rebuild succeeds (it used to fail with "Cannot copy out of meta tensor;
no data!") and every request is answered."""

import threading

import httpx

from indexing.build import build_index
from indexing.db import migrate
from indexing.ingest import ingest_bytes
from indexing.settings import Settings
from tests.reliability.helpers import TOKEN, paper_lines, sample_ideas, scale, wait_job, write_report

SCORERS = 4


def test_first_rebuild_and_first_scores_load_the_model_together(tmp_path, live_server, minilm):
    outcomes = []
    for attempt in range(scale(1, 5)):  # fresh servers: each first load is a new chance for the race
        settings = Settings(home=tmp_path / f"home{attempt}")
        migrate(settings.db_path)
        ingest_bytes(("\n".join(paper_lines(0, 20)) + "\n").encode(), "seed.jsonl", db_path=settings.db_path)
        build_index(settings, embedder=minilm)  # in this process: the server has loaded no model yet
        server = live_server(settings.home)
        ideas = sample_ideas()[:4]
        go = threading.Barrier(SCORERS + 1)
        answers: list[tuple[int, str]] = []
        job: dict = {}

        def score(k: int) -> None:
            go.wait()
            r = httpx.post(f"{server.url}/v1/score", json={"system": "load", "run": f"r{k}", "ideas": ideas},
                           timeout=300)
            answers.append((r.status_code, r.text[:300]))

        def rebuild() -> None:
            go.wait()
            r = httpx.post(f"{server.url}/v1/index/rebuild", headers=TOKEN, timeout=60)
            job.update(r.json())

        threads = [threading.Thread(target=score, args=(k,)) for k in range(SCORERS)]
        threads.append(threading.Thread(target=rebuild))
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        done = wait_job(server.url, job["id"])
        outcomes.append({"rebuild": done["status"], "error": done["error"], "scores": [a[0] for a in answers]})
        server.stop()
    write_report("first_model_load", {"attempts": outcomes})
    for o in outcomes:
        assert o["rebuild"] == "succeeded", o
        assert o["scores"] == [200] * SCORERS, o
