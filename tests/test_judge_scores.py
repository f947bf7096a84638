"""Judge-score import: line-numbered validation, nothing written on rejection, upserts, API and CLI."""

import json
from datetime import date

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from indexing.db import migrate, session_scope
from indexing.models import Idea, JudgeScore, Run, Score
from indexing.settings import Settings
from service.judge_scores import import_judge_scores
from service.rejections import ImportRejected

HEADER = "idea_id,judge,novelty,feasibility,impact,overall\n"


@pytest.fixture()
def db(tmp_path):
    """Two systems; idea 'shared' exists in both, 'a1'/'a2' only in sys-a, 'b1' only in sys-b."""
    db_path = tmp_path / "hindsight.db"
    migrate(db_path)
    with session_scope(db_path) as session:
        for system, ids in (("sys-a", ["a1", "a2", "shared"]), ("sys-b", ["b1", "shared"])):
            run = Run(system=system, label="r1")
            session.add(run)
            session.flush()
            for idea_id in ids:
                idea = Idea(run_id=run.id, idea_id=idea_id, problem="p", method="m")
                session.add(idea)
                session.flush()
                session.add(Score(idea_pk=idea.pk, score=0.1, matched=True, model="m", theta=0.5, index_version="v",
                                  cutoff=date(2023, 6, 1), window_end=date(2025, 12, 31), top_k=5))
    return db_path


def stored(db_path) -> dict:
    with session_scope(db_path) as session:
        rows = session.execute(select(Run.system, Idea.idea_id, JudgeScore).join(Idea, Idea.pk == JudgeScore.idea_pk)
                               .join(Run, Run.id == Idea.run_id)).all()
        return {(s, i, j.judge): (j.novelty, j.feasibility, j.impact, j.overall) for s, i, j in rows}


def run_import(db_path, text: str, **kw):
    with session_scope(db_path) as session:
        return import_judge_scores(session, text.encode(), name=kw.pop("name", "scores.csv"), **kw)


def rejected(db_path, text: str, **kw) -> list[str]:
    with pytest.raises(ImportRejected) as info:
        run_import(db_path, text, **kw)
    assert not info.value.report.written
    assert stored(db_path) == {}, "a rejected file must write nothing"
    return [str(e) for e in info.value.report.errors]


def test_csv_import_and_upsert(db):
    report = run_import(db, HEADER + "a1,gpt,7,6,5,6.5\na2,gpt,3,,4,\na1,claude,8,8,8,8\nb1,gpt,1,2,3,4\n")
    assert (report.inserted, report.updated, report.unchanged, report.rows) == (4, 0, 0, 4)
    assert report.judges == ["claude", "gpt"]
    assert stored(db)[("sys-a", "a2", "gpt")] == (3.0, None, 4.0, None)
    # re-import: a changed row updates, an identical one is unchanged, a partial row keeps the other dimensions
    again = run_import(db, "idea_id,judge,overall\na1,gpt,9\na1,claude,8\na2,gpt,2\n")
    assert (again.inserted, again.updated, again.unchanged) == (0, 2, 1)
    after = stored(db)
    assert after[("sys-a", "a1", "gpt")] == (7.0, 6.0, 5.0, 9.0)
    assert after[("sys-a", "a2", "gpt")] == (3.0, None, 4.0, 2.0)
    assert len(after) == 4


def test_jsonl_import_with_system_column(db):
    lines = [{"idea_id": "shared", "judge": "gpt", "system": "sys-b", "novelty": 4, "overall": "7.5", "note": "x"},
             {"idea_id": "shared", "judge": "gpt", "system": "sys-a", "overall": 2}]
    report = run_import(db, "\n".join(json.dumps(x) for x in lines) + "\n", name="scores.jsonl")
    assert report.format == "jsonl" and report.inserted == 2 and report.ignored_fields == ["note"]
    assert stored(db)[("sys-b", "shared", "gpt")] == (4.0, None, None, 7.5)
    assert stored(db)[("sys-a", "shared", "gpt")] == (None, None, None, 2.0)


def test_unknown_idea_rejects_the_whole_file(db):
    errors = rejected(db, HEADER + "a1,gpt,1,1,1,1\nnope,gpt,1,1,1,1\n")
    assert errors == ["line 3: field 'idea_id': unknown idea id 'nope' (score the ideas first)"]


def test_non_numeric_values_are_named_by_line_and_field(db):
    errors = rejected(db, HEADER + "a1,gpt,high,1,1,1\na2,gpt,1,1,1,nan\n")
    assert errors[0].startswith("line 2: field 'novelty': expected a number, got 'high'")
    assert errors[1].startswith("line 3: field 'overall': expected a finite number")
    jsonl = json.dumps({"idea_id": "a1", "judge": "gpt", "overall": True})
    assert rejected(db, jsonl, name="x.jsonl")[0].startswith("line 1: field 'overall': expected a number")


def test_duplicates_name_both_lines(db):
    errors = rejected(db, HEADER + "a1,gpt,1,1,1,1\na2,gpt,1,1,1,1\na1,gpt,2,2,2,2\n")
    assert errors == ["line 4: field 'idea_id': duplicate: idea 'a1' with judge 'gpt' is already on line 2"]


def test_ambiguous_idea_needs_system_or_run(db):
    errors = rejected(db, HEADER + "shared,gpt,1,1,1,1\n")
    assert "ambiguous" in errors[0] and "sys-a/r1, sys-b/r1" in errors[0] and errors[0].startswith("line 2:")
    report = run_import(db, HEADER + "shared,gpt,1,1,1,1\n", system="sys-b")
    assert report.inserted == 1 and ("sys-b", "shared", "gpt") in stored(db)
    # the same id under the option's system, named twice, is a duplicate
    assert "duplicate" in rejected_after(db, HEADER + "shared,gpt,1,1,1,1\nshared,gpt,2,2,2,2\n", system="sys-b")


def rejected_after(db_path, text, **kw) -> str:
    before = stored(db_path)
    with pytest.raises(ImportRejected) as info:
        run_import(db_path, text, **kw)
    assert stored(db_path) == before
    return str(info.value)


def test_header_and_missing_fields(db):
    assert rejected(db, "idea,judge,overall\na1,gpt,3\n") == ["line 1: field 'idea_id': column missing from the header"]
    assert "no score column" in rejected(db, "idea_id,judge,comment\na1,gpt,ok\n")[0]
    errors = rejected(db, HEADER + ",gpt,1,1,1,1\na1,,1,1,1,1\na2,gpt,,,,\n")
    assert errors == ["line 2: field 'idea_id': missing", "line 3: field 'judge': missing",
                      "line 4: field '<line>': no score: give any of novelty, feasibility, impact, overall, "
                      "interestingness, novel"]


@pytest.fixture()
def client(db, tmp_path):
    settings = Settings(home=tmp_path, service={"admin_token": "secret"})
    from service.app import create_app
    with TestClient(create_app(settings)) as c:
        yield c


def test_api_import_needs_admin_and_reports_lines(client, db):
    files = {"file": ("s.csv", HEADER + "a1,gpt,1,2,3,4\n", "text/csv")}
    assert client.post("/v1/judge-scores", files=files).status_code == 401
    assert client.post("/v1/judge-scores", files=files, headers={"Authorization": "Bearer wrong"}).status_code == 403
    auth = {"Authorization": "Bearer secret"}
    bad = client.post("/v1/judge-scores", headers=auth,
                      files={"file": ("s.csv", HEADER + "a1,gpt,x,2,3,4\nzz,gpt,1,1,1,1\n", "text/csv")})
    assert bad.status_code == 422
    detail = bad.json()["detail"]
    assert [(e["line"], e["field"]) for e in detail["errors"]] == [(2, "novelty"), (3, "idea_id")]
    assert stored(db) == {}
    ok = client.post("/v1/judge-scores", headers=auth, files=files)
    assert ok.status_code == 200 and ok.json()["inserted"] == 1
    assert client.get("/v1/judge-scores").json() == [
        {"judge": "gpt", "ideas": 1, "dimensions": {"novelty": 1, "feasibility": 1, "impact": 1, "overall": 1,
                                                    "interestingness": 0, "novel": 0}}]


def test_cli_import(db, tmp_path, monkeypatch):
    from indexing.settings import get_settings
    from service.cli import app
    monkeypatch.setenv("HINDSIGHT_HOME", str(tmp_path))
    get_settings.cache_clear()
    try:
        good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
        good.write_text(HEADER + "a1,gpt,1,2,3,4\n")
        bad.write_text(HEADER + "a2,gpt,1,2,3,4\na2,gpt,1,2,3,4\n")
        runner = CliRunner()
        result = runner.invoke(app, ["judge", "import", str(bad), "--json"])
        assert result.exit_code == 1 and json.loads(result.stdout)["errors"][0]["line"] == 3
        result = runner.invoke(app, ["judge", "import", str(good), "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["inserted"] == 1
        assert stored(db) == {("sys-a", "a1", "gpt"): (1.0, 2.0, 3.0, 4.0)}
    finally:
        get_settings.cache_clear()


def test_api_import_scoped_to_no_stored_run_is_404(client, db):
    """A system/run the store holds no run of is what is not there (404), not a bad file; nothing written."""
    auth = {"Authorization": "Bearer secret"}
    files = {"file": ("s.csv", HEADER + "a1,gpt,1,2,3,4\n", "text/csv")}
    for scope in ({"system": "no-such-system"}, {"run": "r9"}, {"system": "sys-b", "run": "r9"}):
        r = client.post("/v1/judge-scores", headers=auth, files=files, params=scope)
        assert r.status_code == 404 and "no stored run" in r.json()["detail"], (scope, r.text)
    assert stored(db) == {}
    r = client.post("/v1/judge-scores", headers=auth, files=files, params={"system": "sys-a", "run": "r1"})
    assert r.status_code == 200 and stored(db) == {("sys-a", "a1", "gpt"): (1, 2, 3, 4)}
