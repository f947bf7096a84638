"""Shared pieces of the reliability suite: scale knobs, real servers, corpora, report files."""

import json
import os
import random
import re
import time
from pathlib import Path

import httpx

from tests.helpers import ROOT, Server

FULL = os.environ.get("HINDSIGHT_RELIABILITY_FULL") == "1"
SEED = int(os.environ.get("HINDSIGHT_RELIABILITY_SEED", "20260601"))
TOKEN_VALUE = "rel-admin-7f3a9c0e5b"  # distinctive, so a leak is found by a plain substring search
TOKEN = {"Authorization": f"Bearer {TOKEN_VALUE}"}
PAPERS = ROOT / "data" / "papers.jsonl"
IDEAS = ROOT / "data" / "ideas" / "sample.jsonl"
# an absolute path or a Python traceback in an answer
LEAK = re.compile(r"Traceback \(most recent|File \"/|(?<![\w.:/])/(?:tmp|home|root|work|var|usr|proc|etc)/")


def scale(fast: int, full: int) -> int:
    return full if FULL else fast


def paper_lines(start: int = 0, stop: int | None = None) -> list[str]:
    return [line for line in PAPERS.read_text().splitlines() if line.strip()][start:stop]


def sample_ideas() -> list[dict]:
    return [json.loads(line) for line in IDEAS.read_text().splitlines() if line.strip()]


def synthetic_papers(prefix: str, n: int, rng: random.Random) -> list[dict]:
    """Fresh, valid papers inside the default window, with ids no other file uses."""
    words = ("graph", "retrieval", "diffusion", "agent", "protein", "speech", "robot", "sparse", "causal", "vision",
             "language", "reward", "memory", "kernel", "federated", "contrastive", "tabular", "physics")
    out = []
    for i in range(n):
        topic = " ".join(rng.sample(words, 4))
        out.append({"id": f"{prefix}-{i:03d}", "title": f"{topic.title()} {prefix} {i}",
                    "abstract": f"We study {topic} and propose a method evaluated on {rng.randint(2, 9)} benchmarks.",
                    "publication_date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    "venue": rng.choice(["ICLR", "NeurIPS", "arXiv", "ACL"]), "citation_count": rng.randint(0, 500)})
    return out


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def write_report(name: str, data: dict) -> None:
    """Figures for docs/reliability.md: printed, and saved when HINDSIGHT_RELIABILITY_OUT names a folder."""
    text = json.dumps(data, indent=2, default=str)
    print(f"\n[reliability] {name}: {text}")
    out = os.environ.get("HINDSIGHT_RELIABILITY_OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"{name}.json").write_text(text + "\n")


class LiveServer(Server):
    """The real server with the suite's admin token, logging at info (the access tests read the log)."""

    def __init__(self, home: Path, token: str | None = TOKEN_VALUE, env: dict | None = None) -> None:
        super().__init__(home, token=token, env={"COLUMNS": "200", "NO_COLOR": "1", **(env or {})},
                         log_level="info", start_timeout=120)


def upload(url: str, name: str, data: bytes, *, headers: dict | None = None, timeout: float = 120,
           **params) -> httpx.Response:
    return httpx.post(f"{url}/v1/papers", files={"file": (name, data)}, headers=TOKEN if headers is None else headers,
                      params=params, timeout=timeout)


def wait_job(url: str, job_id: str, timeout: float = 600) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=30).json()
        if state["status"] in ("succeeded", "failed"):
            return state
        time.sleep(0.25)
    raise AssertionError(f"job {job_id} did not finish within {timeout} s")


def rebuild(url: str, timeout: float = 600) -> dict:
    """POST a rebuild and wait for it; returns the finished job."""
    response = httpx.post(f"{url}/v1/index/rebuild", headers=TOKEN, timeout=30)
    assert response.status_code == 202, response.text
    return wait_job(url, response.json()["id"], timeout)


def seeded_server(live_server, home: Path, lines: int = 40, **kwargs):
    """A server whose database holds the first `lines` sample papers and whose first index is published."""
    server = live_server(home, **kwargs)
    data = ("\n".join(paper_lines(0, lines)) + "\n").encode()
    response = upload(server.url, "seed.jsonl", data)
    assert response.status_code == 200, response.text
    job = rebuild(server.url)
    assert job["status"] == "succeeded", job
    return server, job["result"]["version"]
