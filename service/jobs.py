"""Background jobs (index rebuilds) run one at a time in a worker thread."""

import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

from indexing.errors import ConflictError, NotFoundError


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Jobs:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindsight-job")
        self._jobs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def submit(self, kind: str, fn: Callable[[Callable[[str, int, int], None]], Any]) -> dict:
        """Run fn(progress) in the background; progress(stage, advance, total) updates the job."""
        job_id = uuid.uuid4().hex[:12]
        job: dict[str, Any] = {"id": job_id, "kind": kind, "status": "queued", "created": _now(), "finished": None,
               "progress": {"stage": None, "done": 0, "total": 0}, "result": None, "error": None}
        with self._lock:
            self._jobs[job_id] = job

        def progress(stage: str, advance: int, total: int) -> None:
            p = job["progress"]
            if p["stage"] != stage:
                p.update(stage=stage, done=0)
            p["done"] += advance
            p["total"] = total

        def run() -> None:
            job["status"] = "running"
            try:
                job["result"] = fn(progress)
                job["status"] = "succeeded"
            except Exception as exc:  # the job reports any failure instead of dying silently
                job["status"], job["error"] = "failed", str(exc)
            job["finished"] = _now()

        self._pool.submit(run)
        return dict(job)

    def submit_alone(self, kind: str, fn: Callable[[Callable[[str, int, int], None]], Any], busy: str) -> dict:
        """submit, unless a job of this kind is queued or running: then a 409 saying `busy` and which job."""
        running = self.latest(kind)
        if running and running["status"] in ("queued", "running"):
            raise ConflictError(f"{busy} by job {running['id']}")
        return self.submit(kind, fn)

    def latest(self, kind: str) -> dict | None:
        """The newest job of a kind (jobs are kept in submission order)."""
        with self._lock:
            found = [j for j in self._jobs.values() if j["kind"] == kind]
        return dict(found[-1]) if found else None

    def get(self, job_id: str) -> dict | None:
        job = self._jobs.get(job_id)
        return dict(job) if job else None

    def find(self, job_id: str) -> dict:
        """The job by id; 404 when this server has none by it."""
        found = self.get(job_id)
        if found is None:
            raise NotFoundError(f"no job {job_id!r}")
        return found

    def find_latest(self, kind: str, missing: str) -> dict:
        """The newest job of a kind; 404 saying `missing` when there is none."""
        found = self.latest(kind)
        if found is None:
            raise NotFoundError(missing)
        return found

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
