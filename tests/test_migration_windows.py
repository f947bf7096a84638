"""Migration 0003_windows on a database that already holds scores: they keep their window and get no leak flag."""

from alembic import command
from sqlalchemy import create_engine, inspect, text

from indexing.db import alembic_config


def test_upgrade_keeps_scores_and_adds_systems(tmp_path):
    db = tmp_path / "hindsight.db"
    cfg = alembic_config(db)
    command.upgrade(cfg, "0002")
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO runs (id, system, label, created_at) VALUES (1, 's', 'r', '2026-01-01')"))
        conn.execute(text("INSERT INTO ideas (pk, run_id, idea_id, text) VALUES (1, 1, 'i1', 'x')"))
        conn.execute(text("INSERT INTO scores (id, idea_pk, score, matched, model, theta, index_version, cutoff, "
                          "window_end, top_k, scored_at) VALUES (1, 1, 0.5, 1, 'minilm', 0.75, 'v0001', "
                          "'2023-06-01', '2025-12-31', 20, '2026-01-01')"))
    command.upgrade(cfg, "head")
    with engine.begin() as conn:
        row = conn.execute(text("SELECT score, cutoff, window_end, leak_risk, citation_normalisation "
                                "FROM scores")).one()
        assert tuple(row) == (0.5, "2023-06-01", "2025-12-31", 0, "global")
        conn.execute(text("INSERT INTO systems (name, knowledge_cutoff, model, updated_at) "
                          "VALUES ('s', '2024-01-01', NULL, '2026-01-01')"))
    assert "systems" in inspect(engine).get_table_names()
    command.downgrade(cfg, "0002")
    insp = inspect(create_engine(f"sqlite:///{db}"))
    assert "systems" not in insp.get_table_names()
    assert "leak_risk" not in {c["name"] for c in insp.get_columns("scores")}
