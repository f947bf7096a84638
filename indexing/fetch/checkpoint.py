"""Where a walk stands (cursor or token, pages, counts), kept in the database under HINDSIGHT_HOME.

The checkpoint is written inside the same transaction as the page it follows, so after a kill either both the
page's rows and the cursor after it are stored, or neither is: a resume has no gap and no duplicate.
"""

import fcntl
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.db import session_scope
from indexing.models import FetchCheckpoint, utcnow

COUNTS = ("read", "inserted", "updated", "unchanged", "duplicates", "rejected")
KEEP_ERRORS = 100


class FetchBusy(RuntimeError):
    """Another process is walking the same query."""


def walk_key(source: str, query: dict) -> str:
    """A stable name for a walk: its source and its query (never the key or contact address)."""
    blob = json.dumps({"source": source, "query": query}, sort_keys=True, default=str)
    return f"{source}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


@dataclass
class State:
    key: str
    source: str
    query: dict
    cursor: str | None = None
    done: bool = False
    pages: int = 0
    records: int = 0  # records the API returned, valid or not
    without_abstract: int = 0  # of those, served with a null or empty abstract
    cost_usd: float = 0.0  # billed, as the API reports it
    total: int | None = None  # what the API says the walk holds
    counts: dict = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    errors: list[str] = field(default_factory=list)  # the latest rejected rows, 'file:line: field ...'
    started: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def load(db_path: Path, key: str) -> State | None:
    with session_scope(db_path) as session:
        row = session.get(FetchCheckpoint, key)
        if row is None:
            return None
        return State(key=row.key, source=row.source, query=row.query, cursor=row.cursor, done=row.done,
                     started=row.started_at.isoformat(), **row.state)


def all_states(db_path: Path) -> list[State]:
    """Every walk this HINDSIGHT_HOME knows, newest first."""
    with session_scope(db_path) as session:
        keys = session.scalars(select(FetchCheckpoint.key).order_by(FetchCheckpoint.updated_at.desc())).all()
    return [state for k in keys if (state := load(db_path, k)) is not None]


def save(session: Session, state: State) -> None:
    """Write the checkpoint in the caller's transaction."""
    extra = {k: v for k, v in state.as_dict().items()
             if k not in ("key", "source", "query", "cursor", "done", "started")}
    extra["errors"] = extra["errors"][-KEEP_ERRORS:]
    row = session.get(FetchCheckpoint, state.key)
    if row is None:
        row = FetchCheckpoint(key=state.key, source=state.source, query=state.query, started_at=utcnow())
        session.add(row)
    row.cursor, row.done, row.state, row.updated_at = state.cursor, state.done, extra, utcnow()
    session.flush()


def save_now(db_path: Path, state: State) -> None:
    with session_scope(db_path) as session:
        save(session, state)


@contextmanager
def walk_lock(home: Path, key: str) -> Iterator[None]:
    """One process per walk; a killed holder's lock goes with it."""
    folder = home / "fetch"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{key}.lock").open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FetchBusy(f"another fetch of this query ({key}) is running in this HINDSIGHT_HOME") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
