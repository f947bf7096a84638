"""SQLite engine and sessions; the schema is owned by the Alembic migrations."""

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    # busy_timeout first: every later statement may need a lock another connection holds
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


@lru_cache
def get_engine(db_path: Path) -> Engine:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(f"sqlite:///{db_path}", connect_args={"timeout": 30, "check_same_thread": False})
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def alembic_config(db_path: Path) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", f"sqlite:///{db_path}")
    return cfg


def migrate(db_path: Path) -> None:
    """Bring the database to the newest schema (creating it when absent)."""
    with get_engine(db_path).connect() as conn:  # creates the folder; WAL mode is stored in the file
        conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    command.upgrade(alembic_config(db_path), "head")


@lru_cache
def _sessionmaker(db_path: Path) -> sessionmaker[Session]:
    return sessionmaker(get_engine(db_path), expire_on_commit=False)


@contextmanager
def session_scope(db_path: Path) -> Iterator[Session]:
    """One transaction: committed on success, rolled back on any error."""
    session = _sessionmaker(db_path)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
