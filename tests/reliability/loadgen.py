"""A bounded load generator for the scoring endpoint: steady rate, loopback only, every answer kept for checks."""

import random
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
import numpy as np

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@dataclass
class Answer:
    sent: float  # time.monotonic() when the request left
    received: float
    status: int
    version: str | None = None
    theta: float | None = None
    ideas: list[dict] = field(default_factory=list)
    error: str | None = None
    matcher: str = "dense"
    thresholds: dict = field(default_factory=dict)

    @property
    def latency(self) -> float:
        return self.received - self.sent


@dataclass
class VersionSnapshot:
    """What a published version holds: paper_id -> impact, and its threshold."""

    version: str
    theta: float
    impacts: dict[str, float]
    posted: float  # the rebuild that made it was requested at this time (monotonic)
    confirmed: float  # its job had succeeded, so the pointer named it, by this time


class LoadGenerator:
    """Workers POST /v1/score at a fixed total rate until stop(), max_requests or max_seconds, whichever is first."""

    def __init__(self, url: str, ideas: list[dict], *, rate: float, max_requests: int, max_seconds: float,
                 workers: int = 2, seed: int = 0, timeout: float = 60) -> None:
        host = urlsplit(url).hostname
        if host not in LOOPBACK:
            raise ValueError(f"the load generator only targets loopback addresses, not {host!r}")
        self.url, self.ideas, self.rate = url, ideas, rate
        self.max_requests, self.max_seconds, self.timeout = max_requests, max_seconds, timeout
        self.answers: list[Answer] = []
        self._workers = workers
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._issued = 0
        self._started = 0.0

    def start(self) -> "LoadGenerator":
        self._started = time.monotonic()
        self._threads = [threading.Thread(target=self._work, args=(i,), daemon=True) for i in range(self._workers)]
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> list[Answer]:
        self._stop.set()
        for t in self._threads:
            t.join(self.timeout + 5)
        return self.answers

    def _next_slot(self) -> tuple[int, float] | None:
        """The next request number and when it is due; None once a bound is reached."""
        with self._lock:
            if self._issued >= self.max_requests:
                return None
            n = self._issued
            self._issued += 1
            return n, self._started + n / self.rate

    def _work(self, worker: int) -> None:
        with httpx.Client(timeout=self.timeout) as client:
            while not self._stop.is_set():
                slot = self._next_slot()
                if slot is None:
                    return
                n, due = slot
                if due - self._started > self.max_seconds:
                    return
                delay = due - time.monotonic()
                if delay > 0 and self._stop.wait(delay):
                    return
                idea = self.ideas[n % len(self.ideas)]
                body = {"system": "load", "run": f"w{worker}", "ideas": [{**idea, "id": f"{idea['id']}-{n}"}]}
                self.answers.append(self._post(client, body))

    def _post(self, client: httpx.Client, body: dict) -> Answer:
        sent = time.monotonic()
        try:
            r = client.post(f"{self.url}/v1/score", json=body)
        except httpx.HTTPError as exc:
            return Answer(sent, time.monotonic(), 0, error=f"{type(exc).__name__}: {exc}")
        received = time.monotonic()
        if r.status_code != 200:
            return Answer(sent, received, r.status_code, error=r.text[:500])
        out = r.json()
        ideas = [{"id": i["id"], "score": i["score"], "matched": i["matched"], "shape": i.get("shape"),
                  "matches": [{k: m.get(k) for k in ("paper_id", "similarity", "impact", "above_threshold",
                                                     "p_realised", "p_direction", "p_method", "realised",
                                                     "direction")}
                              for m in i["matches"]]} for i in out["ideas"]]
        return Answer(sent, received, 200, version=out["index_version"], theta=out["theta"], ideas=ideas,
                      matcher=out.get("matcher", "dense"), thresholds=out.get("thresholds", {}))


def latency_summary(answers: list[Answer]) -> dict:
    ok = [a.latency * 1000 for a in answers if a.status == 200]
    return {"sent": len(answers), "failed": sum(a.status != 200 for a in answers),
            "p50_ms": round(float(np.percentile(ok, 50)), 1) if ok else None,
            "p99_ms": round(float(np.percentile(ok, 99)), 1) if ok else None,
            "max_ms": round(max(ok), 1) if ok else None}


def check_answer(answer: Answer, versions: dict[str, VersionSnapshot], order: list[str]) -> list[str]:
    """Problems with one answer: a version that did not exist or was already replaced, or matches that
    disagree with that version's papers, impacts or threshold."""
    snap = versions.get(answer.version or "")
    if snap is None:
        return [f"answer names version {answer.version!r}, which was never published"]
    problems = []
    if snap.posted > answer.received:
        problems.append(f"{snap.version} answered before its rebuild was requested")
    later = order[order.index(snap.version) + 1:] if snap.version in order else []
    if later and versions[later[0]].confirmed < answer.sent:
        problems.append(f"{snap.version} answered after {later[0]} was already current")
    if answer.theta != snap.theta:
        problems.append(f"theta {answer.theta} differs from {snap.version}'s {snap.theta}")
    hybrid = answer.matcher == "hybrid"
    for idea in answer.ideas:
        # the dense matcher ranks by cosine and matches at theta; the hybrid one by p_realised (its thresholds below)
        key = "p_realised" if hybrid else "similarity"
        sims = [m[key] for m in idea["matches"]]
        if sims != sorted(sims, reverse=True):
            problems.append(f"{idea['id']}: matches not sorted by {key}")
        for m in idea["matches"]:
            if m["paper_id"] not in snap.impacts:
                problems.append(f"{idea['id']}: {m['paper_id']} is not in {snap.version}")
            elif abs(snap.impacts[m["paper_id"]] - m["impact"]) > 1e-9:
                problems.append(f"{idea['id']}: impact of {m['paper_id']} differs from {snap.version}'s")
            problems += threshold_problems(idea, m, answer.thresholds if hybrid else {"theta": snap.theta})
        best = max((m["impact"] for m in idea["matches"] if m["above_threshold"]), default=0.0)
        if abs(best - idea["score"]) > 1e-9 or idea["matched"] != any(m["above_threshold"] for m in idea["matches"]):
            problems.append(f"{idea['id']}: score {idea['score']} is not the best matched impact {best}")
    return problems


def threshold_problems(idea: dict, m: dict, thresholds: dict) -> list[str]:
    """A match's decision against the thresholds its answer names (values are rounded to 6 digits in answers)."""
    if "theta" in thresholds:  # dense: cosine >= theta
        cut = thresholds["theta"]
        ok = m["similarity"] >= cut - 1e-6 if m["above_threshold"] else m["similarity"] < cut + 1e-6
        return [] if ok else [f"{idea['id']}: above_threshold disagrees with theta {cut}"]
    if "method" in thresholds:  # problem_and_method: realised needs both on the same paper, and implies direction
        t_dir, t_met = thresholds["direction"][idea["shape"]], thresholds["method"][idea["shape"]]
        both = m["p_direction"] >= t_dir - 1e-6 and m["p_method"] >= t_met - 1e-6
        ok = m["above_threshold"] == m["realised"] and (both and m["direction"] if m["realised"] else True)
        return [] if ok else [f"{idea['id']}: realised disagrees with thresholds {t_dir} / {t_met}"]
    cut = thresholds["realised"][idea["shape"]]  # entries fitted before the rule: a realised model of its own
    ok = m["p_realised"] >= cut - 1e-6 if m["above_threshold"] else m["p_realised"] < cut + 1e-6
    return [] if ok else [f"{idea['id']}: above_threshold disagrees with p_realised threshold {cut}"]
