"""Parallel clients scoring into one run (some idea ids shared between them) while rebuilds run: every answer
2xx, and the stored run holds exactly one score per idea id, the one of a request that sent it, stored whole."""

import random
import sqlite3
import threading
import time

import httpx

from tests.reliability.helpers import (
    SEED, TOKEN, jsonl, sample_ideas, scale, seeded_server, synthetic_papers, upload, wait_job, write_report,
)

CLIENTS, BATCH, SHARED = 8, 16, 24


def test_parallel_clients_one_run_while_rebuilding(tmp_path, live_server):
    server, _ = seeded_server(live_server, tmp_path / "home", lines=30)
    url = server.url
    seconds = scale(20, 60)
    texts = [i.get("text") or f"{i.get('problem', '')} {i.get('method', '')}" for i in sample_ideas()]
    answers: list[tuple[int, str]] = []
    sent: dict[str, dict[str, float]] = {}  # idea id -> {text sent: score answered}
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS + 1)

    def client(worker: int) -> None:
        rng = random.Random(SEED + worker)
        with httpx.Client(timeout=120) as http:
            start.wait()
            deadline = time.monotonic() + seconds
            n = 0
            while time.monotonic() < deadline:
                n += 1
                ids = rng.sample([f"shared-{k}" for k in range(SHARED)], BATCH // 2)
                ids += [f"c{worker}-{n}-{k}" for k in range(BATCH - len(ids))]
                ideas = [{"id": i, "text": f"{rng.choice(texts)} (client {worker}, request {n})"} for i in ids]
                r = http.post(f"{url}/v1/score", json={"system": "par", "run": "one", "ideas": ideas})
                with lock:
                    answers.append((r.status_code, r.text[:300]))
                    if r.status_code == 200:
                        for idea, out in zip(ideas, r.json()["ideas"]):
                            sent.setdefault(idea["id"], {})[idea["text"]] = out["score"]

    threads = [threading.Thread(target=client, args=(w,)) for w in range(CLIENTS)]
    for t in threads:
        t.start()
    start.wait()
    jobs = []
    for k in range(2):  # two rebuilds during the load, each with new papers to embed
        assert upload(url, f"more{k}.jsonl", jsonl(synthetic_papers(f"par{k}", 15, random.Random(SEED + k)))
                      ).status_code == 200
        r = httpx.post(f"{url}/v1/index/rebuild", headers=TOKEN, timeout=30)
        assert r.status_code == 202, r.text
        jobs.append(r.json()["id"])
    for t in threads:
        t.join(seconds + 300)
    finished = [wait_job(url, j) for j in jobs]

    failed = [a for a in answers if not 200 <= a[0] < 300]
    con = sqlite3.connect(server.home / "hindsight.db", timeout=30)
    try:
        rows = con.execute("SELECT i.idea_id, i.text, s.score, s.id FROM ideas i JOIN runs r ON r.id = i.run_id "
                           "LEFT JOIN scores s ON s.idea_pk = i.pk WHERE r.system = 'par' AND r.label = 'one'"
                           ).fetchall()
        scores_per_idea = con.execute(
            "SELECT max(c) FROM (SELECT count(*) c FROM scores GROUP BY idea_pk)").fetchone()[0]
        orphans = con.execute("SELECT count(*) FROM matches m LEFT JOIN scores s ON s.id = m.score_id "
                              "WHERE s.id IS NULL").fetchone()[0]
        runs = con.execute("SELECT count(*) FROM runs WHERE system = 'par' AND label = 'one'").fetchone()[0]
    finally:
        con.close()
    stored = {idea_id: (text, score) for idea_id, text, score, _ in rows}
    mismatched = [i for i, (text, score) in stored.items() if sent.get(i, {}).get(text) != score]
    write_report("parallel_scoring", {
        "clients": CLIENTS, "batch": BATCH, "seconds": seconds, "requests": len(answers), "non_2xx": len(failed),
        "idea_ids": len(sent), "stored": len(rows), "rebuilds": [f["status"] for f in finished]})
    assert not failed, failed[:5]
    assert [f["status"] for f in finished] == ["succeeded", "succeeded"], finished
    assert len(answers) >= CLIENTS and runs == 1
    assert len(rows) == len(stored) == len(sent), "one stored idea per idea id answered"
    assert all(score is not None for _, _, score, _ in rows) and scores_per_idea == 1 and orphans == 0
    # the stored text and score come from one request that sent that id: each request is one transaction
    assert not mismatched, mismatched[:5]
    listed = httpx.get(f"{url}/v1/runs/one/scores", params={"system": "par"}, timeout=60).json()["scores"]
    assert sorted(s["id"] for s in listed) == sorted(sent)


def test_a_locked_database_answers_503_with_retry_after(tmp_path, live_server):
    """A writer that holds SQLite's write lock longer than HINDSIGHT_WRITE_RETRY_SECONDS: the scoring request
    retries for that long, then answers 503 with Retry-After (never a 500); once the lock is gone it succeeds."""
    server, _ = seeded_server(live_server, tmp_path / "home", lines=20, env={"HINDSIGHT_WRITE_RETRY_SECONDS": "2"})
    body = {"system": "busy", "run": "one", "ideas": sample_ideas()[:2]}
    assert httpx.post(f"{server.url}/v1/score", json=body, timeout=120).status_code == 200  # model loaded
    holder = sqlite3.connect(server.home / "hindsight.db", timeout=30, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, as a long CLI ingest holds it
    try:
        started = time.monotonic()
        r = httpx.post(f"{server.url}/v1/score", json=body, timeout=120)
        waited = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert r.status_code == 503 and r.headers.get("retry-after", "").isdigit(), (r.status_code, r.text)
    assert "locked" in r.json()["detail"] and 1.5 <= waited < 20, waited
    again = httpx.post(f"{server.url}/v1/score", json=body, timeout=120)
    assert again.status_code == 200, again.text
    write_report("locked_database", {"status": r.status_code, "retry_after": r.headers["retry-after"],
                                     "seconds_waited": round(waited, 2)})
