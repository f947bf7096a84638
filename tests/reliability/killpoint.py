"""Run the `hindsight` CLI and SIGKILL it at its N-th I/O event (a SQL statement, a commit, a file write, fsync
or rename), the way SQLite's crash tests cut power at a chosen write.

    python -m tests.reliability.killpoint ingest a.jsonl      # HINDSIGHT_KILL_AT=N, HINDSIGHT_KILL_COUNT=file

With HINDSIGHT_KILL_AT unset the command runs to the end and the number of events is written to
HINDSIGHT_KILL_COUNT, which the test uses to draw kill points uniformly over the whole run.
"""

import atexit
import functools
import os
import pathlib
import shutil
import signal
import sys

KILL_AT = int(os.environ.get("HINDSIGHT_KILL_AT", "0"))
COUNT_FILE = os.environ.get("HINDSIGHT_KILL_COUNT")
events = 0
last = ""


def tick(kind: str) -> None:
    global events, last
    events += 1
    last = kind
    if events == KILL_AT:
        if COUNT_FILE:
            pathlib.Path(COUNT_FILE).write_text(f"{events} {kind}\n")
        os.kill(os.getpid(), signal.SIGKILL)


def counted(kind: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        tick(kind)
        return fn(*args, **kwargs)
    return wrapper


def install() -> None:
    import faiss
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    event.listen(Engine, "before_cursor_execute", lambda *a, **k: tick("sql"))
    event.listen(Engine, "commit", lambda *a, **k: tick("commit"))
    for name in ("rename", "replace", "fsync"):
        setattr(os, name, counted(name, getattr(os, name)))
    shutil.rmtree = counted("rmtree", shutil.rmtree)
    faiss.write_index = counted("write_index", faiss.write_index)
    pathlib.Path.write_bytes = counted("write_bytes", pathlib.Path.write_bytes)


def report() -> None:
    if COUNT_FILE and not KILL_AT:
        pathlib.Path(COUNT_FILE).write_text(f"{events} {last}\n")


if __name__ == "__main__":
    install()
    atexit.register(report)
    from service.cli import main

    sys.argv = ["hindsight", *sys.argv[1:]]
    main()
