"""SQLite engine and sessions; the schema is owned by the Alembic migrations."""

import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random_exponential

if TYPE_CHECKING:  # SQLAlchemy and Alembic load where used: `hindsight index status` needs neither (docs/startup.md)
    from alembic.config import Config
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

T = TypeVar("T")

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
BUSY_TIMEOUT_MS = 30_000


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    # busy_timeout first: every later statement may need a lock another connection holds
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


@lru_cache
def get_engine(db_path: Path) -> "Engine":
    from sqlalchemy import create_engine, event

    db_path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(f"sqlite:///{db_path}", connect_args={"timeout": 30, "check_same_thread": False})
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def alembic_config(db_path: Path) -> "Config":
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", f"sqlite:///{db_path}")
    return cfg


def head_revision() -> str:
    """The newest migration's revision id: the last file's, since file names sort in chain order
    (tests/test_migration_order.py)."""
    newest = sorted(p for p in (MIGRATIONS_DIR / "versions").glob("[0-9]*.py"))[-1]
    found = re.search(r"^revision\s*=\s*['\"]([^'\"]+)['\"]", newest.read_text(encoding="utf-8"), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"{newest}: no revision id")
    return found.group(1)


def at_head(db_path: Path) -> bool:
    """True when the database exists and is at the newest schema (a read of alembic_version, without Alembic)."""
    if not db_path.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error:
        return False
    try:
        rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:  # no such table yet: Alembic creates it
        return False
    finally:
        conn.close()
    return rows == [(head_revision(),)]


def migrate(db_path: Path) -> None:
    """Bring the database to the newest schema (creating it when absent). A database at the newest schema is left
    alone without importing Alembic, which took a third of a second of every command (docs/startup.md)."""
    if at_head(db_path):
        return
    from alembic import command

    with get_engine(db_path).connect() as conn:  # creates the folder; WAL mode is stored in the file
        conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    command.upgrade(alembic_config(db_path), "head")


@lru_cache
def _sessionmaker(db_path: Path) -> "sessionmaker[Session]":
    from sqlalchemy.orm import sessionmaker

    return sessionmaker(get_engine(db_path), expire_on_commit=False)


@contextmanager
def session_scope(db_path: Path, *, immediate: bool = False) -> "Iterator[Session]":
    """One transaction: committed on success, rolled back on any error. immediate: it takes the write lock before its
    first read (write_lock); without it, the driver begins the transaction at the first write, and the reads before
    it see other writers' commits come and go."""
    session = _sessionmaker(db_path)()
    try:
        if immediate:
            write_lock(session)
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def write_lock(session: "Session") -> None:
    """Begin the session's transaction with the write lock (BEGIN IMMEDIATE) unless it has begun one, so that what it
    reads next cannot change before it writes: a check-then-insert stays right with other writers at work."""
    connection = session.connection()
    if not getattr(connection.connection.dbapi_connection, "in_transaction", False):
        connection.exec_driver_sql("BEGIN IMMEDIATE")


class DatabaseBusy(RuntimeError):
    """Writes kept meeting a locked database for the whole retry budget; the caller may try again later."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the database stayed locked by other writers for {seconds:g} s; try again shortly")
        self.seconds = seconds


def is_locked(exc: BaseException) -> bool:
    """SQLite's 'database is locked' / 'database table is locked' (SQLITE_BUSY / SQLITE_LOCKED)."""
    from sqlalchemy.exc import OperationalError

    return isinstance(exc, OperationalError) and "is locked" in str(exc.orig if exc.orig is not None else exc)


def write_transaction(db_path: Path, work: "Callable[[Session], T]", *, budget: float = 30.0) -> T:
    """Run work(session) in its own transaction, committed before returning. A locked database (which busy_timeout
    does not always wait out: a WAL snapshot gone stale fails at once) retries the whole transaction with jittered
    back-off for up to `budget` seconds in all (each attempt's busy_timeout is what is left of it), then raises
    DatabaseBusy."""
    from sqlalchemy.exc import OperationalError

    deadline = time.monotonic() + budget
    retrying = Retrying(retry=retry_if_exception(is_locked), stop=stop_after_delay(budget),
                        wait=wait_random_exponential(multiplier=0.05, max=1.0), reraise=True)
    try:
        for attempt in retrying:
            with attempt:
                with session_scope(db_path) as session:
                    connection = session.connection()
                    left = max(1, min(BUSY_TIMEOUT_MS, int((deadline - time.monotonic()) * 1000)))
                    connection.exec_driver_sql(f"PRAGMA busy_timeout={left}")
                    try:
                        return work(session)
                    finally:  # the pooled connection goes back with the usual timeout
                        connection.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    except OperationalError as exc:
        if is_locked(exc):
            raise DatabaseBusy(budget) from exc
        raise
    raise AssertionError("unreachable")  # pragma: no cover
