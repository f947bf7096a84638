"""Two ingests of the same papers at once (two uploads of one API page, the CLI beside the server): the second reads
the store only after the first's transaction has committed, so it finds the papers and updates them, instead of
inserting them again and failing on the papers' unique id (a 500 over HTTP)."""

import threading

from sqlalchemy import event

from indexing.db import get_engine
from indexing.ingest import ingest_bytes
from tests.helpers import FIXTURES


def test_a_second_ingest_of_the_same_papers_waits_for_the_first(settings):
    data = (FIXTURES / "native.jsonl").read_bytes()
    engine = get_engine(settings.db_path)
    second_read = threading.Event()
    results: dict[str, object] = {}

    def ingest(name: str) -> None:
        try:
            results[name] = ingest_bytes(data, f"{name}.jsonl", db_path=settings.db_path)
        except Exception as exc:  # noqa: BLE001 - the assertion below names it
            results[name] = exc

    def meanwhile(conn, cursor, statement, parameters, context, executemany) -> None:
        """As the first is about to write its first paper, the second starts and reads the store."""
        who = threading.current_thread().name
        if who == "second" and statement.lstrip().upper().startswith("SELECT") and "papers" in statement:
            second_read.set()
        if who == "first" and statement.startswith("INSERT INTO papers") and "second" not in threads:
            threads["second"] = threading.Thread(target=ingest, args=("second",), name="second")
            threads["second"].start()
            second_read.wait(timeout=2)  # it reads at once unless the first holds the write lock already

    threads: dict[str, threading.Thread] = {}
    event.listen(engine, "before_cursor_execute", meanwhile)
    try:
        threads["first"] = threading.Thread(target=ingest, args=("first",), name="first")
        threads["first"].start()
        threads["first"].join(60)
        threads["second"].join(60)
    finally:
        event.remove(engine, "before_cursor_execute", meanwhile)
    first, second = results["first"], results["second"]
    assert not isinstance(first, Exception), first
    assert not isinstance(second, Exception), second
    assert (first.inserted, second.inserted, second.unchanged) == (3, 0, 3)  # type: ignore[attr-defined]
