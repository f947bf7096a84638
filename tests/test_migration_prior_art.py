"""Migration 0011_prior_art on a database that already holds a score: it reads as scored without prior art, a
look-back side stored beside a score goes with it, and the downgrade drops only the two new tables."""

from alembic import command
from sqlalchemy import create_engine, event, inspect, text

from indexing.db import alembic_config


def test_upgrade_adds_the_tables_a_score_deletion_cascades_and_downgrade_drops_them(tmp_path):
    db = tmp_path / "hindsight.db"
    cfg = alembic_config(db)
    command.upgrade(cfg, "0010_judging")
    engine = create_engine(f"sqlite:///{db}")
    event.listen(engine, "connect", lambda conn, _: conn.execute("PRAGMA foreign_keys=ON"))
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO runs (id, system, label, created_at) VALUES (1, 's', 'r', '2026-01-01')"))
        conn.execute(text("INSERT INTO ideas (pk, run_id, idea_id, problem) VALUES (1, 1, 'i1', 'p')"))
        conn.execute(text("INSERT INTO scores (id, idea_pk, score, matched, model, theta, index_version, cutoff, "
                          "window_end, top_k, scored_at) VALUES (1, 1, 0.5, 1, 'm', 0.75, 'v1', '2024-01-01', "
                          "'2025-12-31', 20, '2026-01-01')"))
    command.upgrade(cfg, "head")
    tables = set(inspect(engine).get_table_names())
    assert {"prior_art", "prior_art_matches"} <= tables
    with engine.begin() as conn:
        assert conn.execute(text("SELECT count(*) FROM prior_art")).scalar() == 0  # scored without prior art
        conn.execute(text("INSERT INTO prior_art (id, score_id, lookback_days, requested_start, start, \"end\", "
                          "clipped, papers, status, class_realised, class_direction, created_at) VALUES (1, 1, 730, "
                          "'2022-01-01', '2022-01-01', '2023-12-31', 0, 5, 'known', 'recalled', 'recalled', "
                          "'2026-01-01')"))
        conn.execute(text("INSERT INTO prior_art_matches (prior_art_id, rank, paper_id, title, year, "
                          "publication_date, similarity, realised, direction) VALUES (1, 1, 'p', 't', 2023, "
                          "'2023-03-01', 0.9, 1, 1)"))
        conn.execute(text("DELETE FROM scores WHERE id = 1"))  # re-scoring deletes the old score: both sides go
        assert conn.execute(text("SELECT count(*) FROM prior_art")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM prior_art_matches")).scalar() == 0
    command.downgrade(cfg, "0010_judging")
    after = set(inspect(create_engine(f"sqlite:///{db}")).get_table_names())
    assert tables - after == {"prior_art", "prior_art_matches"}
