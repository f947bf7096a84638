"""Migration 0006_idea_origin on a database that already holds ideas and judge scores: they keep their values, their
origin is unknown (NULL), and the downgrade drops only what it added."""

from alembic import command
from sqlalchemy import create_engine, inspect, text

from indexing.db import alembic_config


def test_upgrade_keeps_ideas_and_judge_scores_and_downgrade_drops_the_new_columns(tmp_path):
    db = tmp_path / "hindsight.db"
    cfg = alembic_config(db)
    command.upgrade(cfg, "0003_matcher")
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO runs (id, system, label, created_at) VALUES (1, 's', 'r', '2026-01-01')"))
        conn.execute(text("INSERT INTO ideas (pk, run_id, idea_id, problem, method) VALUES (1, 1, 'i1', 'p', 'm')"))
        conn.execute(text("INSERT INTO judge_scores (id, idea_pk, judge, novelty, imported_at) "
                          "VALUES (1, 1, 'gpt', 7.5, '2026-01-01')"))
    command.upgrade(cfg, "head")
    with engine.begin() as conn:
        idea = conn.execute(text("SELECT idea_id, problem, origin_file, generator, topic, title FROM ideas")).one()
        assert tuple(idea) == ("i1", "p", None, None, None, None)
        judge = conn.execute(text("SELECT judge, novelty, interestingness, novel FROM judge_scores")).one()
        assert tuple(judge) == ("gpt", 7.5, None, None)
        conn.execute(text("UPDATE ideas SET generator = 'ai-researcher', topic = 'math' WHERE pk = 1"))
    command.downgrade(cfg, "0003_matcher")
    insp = inspect(create_engine(f"sqlite:///{db}"))
    assert {c["name"] for c in insp.get_columns("ideas")} == {"pk", "run_id", "idea_id", "problem", "method", "text"}
    assert not {"interestingness", "novel"} & {c["name"] for c in insp.get_columns("judge_scores")}
    with create_engine(f"sqlite:///{db}").begin() as conn:
        assert conn.execute(text("SELECT novelty FROM judge_scores")).scalar() == 7.5
