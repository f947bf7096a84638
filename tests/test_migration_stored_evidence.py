"""Migration 0007_stored_evidence on a database that already holds a hybrid score: it reads as before, with p_method and
the problem sentence null and the warnings not recorded (null, not "none"); the downgrade drops only what it added."""

from alembic import command
from sqlalchemy import create_engine, inspect, text

from indexing.db import alembic_config, session_scope
from service.analyses.ideas import idea_detail
from service.runs import find_run, run_ideas, run_scores


def test_old_scores_read_with_the_new_fields_null_and_downgrade_drops_them(tmp_path):
    db = tmp_path / "hindsight.db"
    cfg = alembic_config(db)
    command.upgrade(cfg, "0006_idea_origin")
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO runs (id, system, label, created_at) VALUES (1, 's', 'r', '2026-01-01')"))
        conn.execute(text("INSERT INTO ideas (pk, run_id, idea_id, problem, method) VALUES (1, 1, 'i1', 'p', 'm')"))
        conn.execute(text(
            "INSERT INTO scores (id, idea_pk, score, matched, model, theta, index_version, cutoff, window_end, top_k, "
            "matcher, matcher_version, thresholds, n_matches, direction_score, n_direction_matches, scored_at) "
            "VALUES (1, 1, 0.4, 1, 'minilm', 0.75, 'v0001', '2023-06-01', '2025-12-31', 20, 'hybrid', 'hybrid-1', "
            "'{}', 1, 0.4, 1, '2026-01-01 00:00:00')"))
        conn.execute(text(
            "INSERT INTO matches (id, score_id, rank, paper_id, title, year, similarity, impact, above_threshold, "
            "p_realised, p_direction, realised, direction, evidence_sentence, shared_terms) "
            "VALUES (1, 1, 1, 'P1', 'A paper', 2024, 0.8, 0.4, 1, 0.7, 0.9, 1, 1, 'We route.', '[\"route\"]')"))
    command.upgrade(cfg, "head")
    with session_scope(db) as session:
        run = find_run(session, "1")
        idea = run_scores(session, run)["scores"][0]
        assert idea["warnings"] is None and idea["shape"] is None
        assert idea["matches"][0]["p_method"] is None and idea["matches"][0]["p_realised"] == 0.7
        assert idea["matches"][0]["evidence"] == {"sentence": "We route.", "problem_sentence": None,
                                                  "shared_terms": ["route"]}
        row = run_ideas(session, run)[0]
        assert row["warnings"] is None and row["best_p_method"] is None and row["best_p_realised"] == 0.7
        detail = idea_detail(session, idea_pk=1)
        assert detail["score"]["warnings"] is None and detail["matches"][0]["problem_sentence"] is None
    command.downgrade(cfg, "0006_idea_origin")
    insp = inspect(create_engine(f"sqlite:///{db}"))
    assert not {"warnings", "shape"} & {c["name"] for c in insp.get_columns("scores")}
    assert not {"p_method", "problem_sentence"} & {c["name"] for c in insp.get_columns("matches")}
    with create_engine(f"sqlite:///{db}").begin() as conn:
        kept = conn.execute(text("SELECT p_realised, evidence_sentence FROM matches")).one()
        assert tuple(kept) == (0.7, "We route.")
