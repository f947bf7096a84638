"""Check-then-insert writers that meet another writer of the same rows: a system declared twice at once, a judge file
imported twice at once, two draws of one run. The second reads only after the first has committed (write_lock), so it
updates the rows the first inserted, or draws from what it left, instead of failing on their unique key (a 500 over
HTTP)."""

import json
import threading
from collections.abc import Callable

from sqlalchemy import event, func, select

from indexing.db import get_engine, session_scope
from indexing.models import JudgeScore, System
from service.judges import import_judge_scores
from service.labels.draws import draw
from service.labels.models import DrawIdea
from service.systems import set_system
from tests.factories import labels_store


def interleave(db_path, write: Callable[[object], object], table: str) -> dict[str, object]:
    """write(session) in a thread 'first'; as it is about to insert into table, the same write starts in 'second',
    and 'first' waits (2 s at most) for 'second' to read the table: at once, unless 'first' holds the write lock."""
    engine = get_engine(db_path)
    second_read = threading.Event()
    results: dict[str, object] = {}
    threads: dict[str, threading.Thread] = {}

    def run(name: str) -> None:
        try:
            with session_scope(db_path) as session:
                results[name] = write(session)
        except Exception as exc:  # noqa: BLE001 - the caller's assertion names it
            results[name] = exc

    def meanwhile(conn, cursor, statement, parameters, context, executemany) -> None:
        who = threading.current_thread().name
        if who == "second" and statement.lstrip().upper().startswith("SELECT") and table in statement:
            second_read.set()
        if who == "first" and statement.startswith(f"INSERT INTO {table}") and "second" not in threads:
            threads["second"] = threading.Thread(target=run, args=("second",), name="second")
            threads["second"].start()
            second_read.wait(timeout=2)

    event.listen(engine, "before_cursor_execute", meanwhile)
    try:
        threads["first"] = threading.Thread(target=run, args=("first",), name="first")
        threads["first"].start()
        threads["first"].join(60)
        threads["second"].join(60)
    finally:
        event.remove(engine, "before_cursor_execute", meanwhile)
    for name in ("first", "second"):
        assert not isinstance(results[name], Exception), f"{name}: {results[name]!r}"
    return results


def test_a_system_declared_twice_at_once(settings):
    labels_store(settings.home)
    interleave(settings.db_path, lambda s: set_system(s, name="new-gen", knowledge_cutoff="2024-01-01"), "systems")
    with session_scope(settings.db_path) as s:
        assert s.scalar(select(func.count()).select_from(System).where(System.name == "new-gen")) == 1


def test_a_judge_file_imported_twice_at_once(settings):
    planted = labels_store(settings.home)
    rows = [{"run": "r1", "system": p["system"], "idea_id": idea_id, "judge": "twice", "novelty": 5.0}
            for idea_id, p in list(planted.items())[:4]]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    got = interleave(settings.db_path, lambda s: import_judge_scores(s, data, name="j.jsonl"), "judge_scores")
    assert (got["first"].inserted, got["second"].unchanged) == (4, 4)  # type: ignore[attr-defined]
    with session_scope(settings.db_path) as s:
        assert s.scalar(select(func.count()).select_from(JudgeScore).where(JudgeScore.judge == "twice")) == 4


def test_two_draws_of_one_run_at_once_are_disjoint(settings):
    labels_store(settings.home)
    got = interleave(settings.db_path, lambda s: draw(s, run="r1", n=3, seed=2), "label_draws")
    first, second = got["first"], got["second"]
    assert isinstance(first, dict) and isinstance(second, dict) and len(first["draws"]) == len(second["draws"]) >= 2
    for a, b in zip(first["draws"], second["draws"], strict=True):  # the same seed: only what was left differs
        assert not set(a["ideas"]) & set(b["ideas"]) and b["available"] == a["available"] - a["n"]
    with session_scope(settings.db_path) as s:
        assert s.scalar(select(func.count()).select_from(DrawIdea)) == sum(d["n"] for d in first["draws"]) * 2
