"""Check-then-insert writers that meet another writer of the same rows: a system declared twice at once, a judge file
imported twice at once, two draws of one run. The second reads only after the first has committed (write_lock), so it
updates the rows the first inserted, or draws from what it left, instead of failing on their unique key (a 500 over
HTTP)."""

import json
from collections.abc import Callable

from sqlalchemy import func, select

from indexing.db import session_scope
from indexing.models import JudgeScore, System
from service.judge_scores import import_judge_scores
from service.labels.draws import draw
from service.labels.models import DrawIdea
from service.systems import set_system
from tests.factories import labels_store
from tests.helpers import interleave


def race(db_path, write: Callable[[object], object], table: str) -> dict[str, object]:
    """write(session), each in a transaction of its own, run twice at once by tests.helpers.interleave."""
    def act() -> object:
        with session_scope(db_path) as session:
            return write(session)
    return interleave(db_path, act, table)


def test_a_system_declared_twice_at_once(settings):
    labels_store(settings.home)
    race(settings.db_path, lambda s: set_system(s, name="new-gen", knowledge_cutoff="2024-01-01"), "systems")
    with session_scope(settings.db_path) as s:
        assert s.scalar(select(func.count()).select_from(System).where(System.name == "new-gen")) == 1


def test_a_judge_file_imported_twice_at_once(settings):
    planted = labels_store(settings.home)
    rows = [{"run": "r1", "system": p["system"], "idea_id": idea_id, "judge": "twice", "novelty": 5.0}
            for idea_id, p in list(planted.items())[:4]]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    got = race(settings.db_path, lambda s: import_judge_scores(s, data, name="j.jsonl"), "judge_scores")
    assert (got["first"].inserted, got["second"].unchanged) == (4, 4)  # type: ignore[attr-defined]
    with session_scope(settings.db_path) as s:
        assert s.scalar(select(func.count()).select_from(JudgeScore).where(JudgeScore.judge == "twice")) == 4


def test_two_draws_of_one_run_at_once_are_disjoint(settings):
    labels_store(settings.home)
    got = race(settings.db_path, lambda s: draw(s, run="r1", n=3, seed=2), "label_draws")
    first, second = got["first"], got["second"]
    assert isinstance(first, dict) and isinstance(second, dict) and len(first["draws"]) == len(second["draws"]) >= 2
    for a, b in zip(first["draws"], second["draws"], strict=True):  # the same seed: only what was left differs
        assert not set(a["ideas"]) & set(b["ideas"]) and b["available"] == a["available"] - a["n"]
    with session_scope(settings.db_path) as s:
        assert s.scalar(select(func.count()).select_from(DrawIdea)) == sum(d["n"] for d in first["draws"]) * 2
