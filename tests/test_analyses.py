"""Analyses on a constructed store with planted quadrants: counts, shares, cuts, statistics equal to scipy."""

import csv
import io
import json
from itertools import product

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import stats
from typer.testing import CliRunner

from indexing.db import session_scope
from indexing.settings import Settings
from service.analyses import AnalysisError, Selection, correlations, quadrants, systems_summary, table_rows, to_csv
from tests import factories as fx


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    return home, fx.analysis_store(home)


@pytest.fixture()
def session(store):
    with session_scope(store[0] / "hindsight.db") as s:
        yield s


def judged(planted, system=None):
    return [r for r in planted if r["overall"] is not None and (system is None or r["system"] == system)]


def expected_counts(rows, high_hs, high_j) -> dict:
    out = {"true_positive": 0, "hidden_gem": 0, "overhyped": 0, "true_negative": 0}
    names = {(True, True): "true_positive", (True, False): "hidden_gem", (False, True): "overhyped",
             (False, False): "true_negative"}
    for r in rows:
        out[names[(high_hs(r), high_j(r))]] += 1
    return out


def counts_of(answer, group) -> dict:
    row = next(c for c in answer["counts"] if c["group"] == group)
    return {k: row[k]["count"] for k in ("true_positive", "hidden_gem", "overhyped", "true_negative")}


def test_default_cuts_recover_the_planted_quadrants(session, store):
    answer = quadrants(session, selection=Selection(), judge="judge-1")
    assert answer["cuts"]["hindsight"]["kind"] == "matched"
    rule = "high judge-1 overall: judge-1 overall > 7 (the median of the selection)"
    assert answer["cuts"]["judge"] == {"kind": "median", "value": fx.JUDGE_MEDIAN, "rule": rule}
    for system, planted in fx.PLANTED.items():
        assert counts_of(answer, system) == planted
        row = next(c for c in answer["counts"] if c["group"] == system)
        for key, n in planted.items():
            assert row[key]["share"] == pytest.approx(n / sum(planted.values()))
    b = next(c for c in answer["counts"] if c["group"] == "sys-b")
    assert (b["ideas"], b["judged"], b["unjudged"]) == (13, 12, 1)
    assert answer["unscored_ideas"] == 1
    total = next(c for c in answer["counts"] if c["group"] == "all")
    assert total["true_positive"] == {"count": 7, "share": 7 / 24}


@pytest.mark.parametrize("hs_cut,judge_cut", [("median", None), ("0.5", None), (None, "8.5"), ("0.3", "5.5")])
def test_cut_choices_change_counts_as_expected(session, store, hs_cut, judge_cut):
    planted = store[1]
    rows = judged(planted)
    hs_value = float(np.median([r["score"] for r in rows])) if hs_cut == "median" else float(hs_cut or 0)
    j_value = float(judge_cut) if judge_cut else float(np.median([r["overall"] for r in rows]))
    answer = quadrants(session, selection=Selection(), judge="judge-1", hindsight_cut=hs_cut, judge_cut=judge_cut)
    high_hs = (lambda r: r["matched"]) if hs_cut is None else (lambda r: r["score"] > hs_value)
    for system in fx.PLANTED:
        want = expected_counts(judged(planted, system), high_hs, lambda r: r["overall"] > j_value)
        assert counts_of(answer, system) == want
    if hs_cut is not None:
        assert answer["cuts"]["hindsight"]["value"] == pytest.approx(hs_value)
    assert answer["cuts"]["judge"]["value"] == pytest.approx(j_value)
    assert counts_of(answer, "sys-a") != fx.PLANTED["sys-a"] or counts_of(answer, "sys-b") != fx.PLANTED["sys-b"]


def test_idea_lists_are_sorted_paginated_with_best_match(session, store):
    planted = {r["idea_pk"]: r for r in store[1]}
    first = quadrants(session, selection=Selection(systems=("sys-a",)), judge="judge-1", quadrant="true_positive",
                      sort="score", order="asc", page=1, page_size=2)
    listing = first["ideas"]["true_positive"]
    assert list(first["ideas"]) == ["true_positive"]
    assert (listing["total"], listing["pages"], len(listing["items"])) == (5, 3, 2)
    scores_all = sorted(r["score"] for r in judged(store[1], "sys-a") if r["matched"] and r["overall"] > 7)
    last = quadrants(session, selection=Selection(systems=("sys-a",)), judge="judge-1", quadrant="true_positive",
                     sort="score", order="asc", page=3, page_size=2)["ideas"]["true_positive"]["items"]
    assert [i["score"] for i in listing["items"] + last] == scores_all[:2] + scores_all[4:]
    for item in listing["items"] + last:
        assert item["best_match"]["title"] == planted[item["idea_pk"]]["best_title"]
    neg = quadrants(session, selection=Selection(), judge="judge-1", quadrant="true_negative", sort="judge",
                    order="desc", page_size=100)["ideas"]["true_negative"]["items"]
    assert [i["judge_value"] for i in neg] == sorted((i["judge_value"] for i in neg), reverse=True)
    assert all(not i["best_match"]["above_threshold"] for i in neg)


def test_spearman_equals_scipy_overall_and_per_system(session, store):
    answer = correlations(session, selection=Selection(), judge="judge-1")
    rows = {(r["scope"], r["dimension"]): r for r in answer["rows"]}
    for scope, dim in product(["all", "sys-a", "sys-b"], ["overall", "novelty"]):
        data = judged(store[1], None if scope == "all" else scope)
        want = stats.spearmanr([r["score"] for r in data], [r[dim] for r in data])
        got = rows[(scope, dim)]
        assert got["n"] == len(data)
        assert got["rho"] == pytest.approx(want.statistic) and got["p"] == pytest.approx(want.pvalue)
    assert ("all", "impact") not in rows  # judge-1 gave no impact scores


def test_systems_summary_and_comparison_equal_scipy(session, store):
    answer = systems_summary(session, selection=Selection(), n_resamples=999, seed=3)
    planted = store[1]
    groups = {g["group"]: g for g in answer["groups"]}
    scores = {s: np.array([r["score"] for r in planted if r["system"] == s]) for s in fx.PLANTED}
    for system, x in scores.items():
        g = groups[system]
        ci = stats.bootstrap((x,), np.mean, n_resamples=999, rng=np.random.default_rng(3)).confidence_interval
        assert g["ideas"] == len(x) and g["mean_score"] == pytest.approx(x.mean())
        assert g["ci"] == pytest.approx([ci.low, ci.high])
        assert g["ci"][0] < g["mean_score"] < g["ci"][1]
        assert g["match_rate"] == pytest.approx(np.mean([r["matched"] for r in planted if r["system"] == system]))
        overall = [r["overall"] for r in judged(planted, system)]
        assert g["judges"]["judge-1"]["overall"] == {"mean": pytest.approx(np.mean(overall)), "n": len(overall)}
    hs = next(c for c in answer["comparisons"] if c["metric"] == "hindsight")
    a, b = scores["sys-a"], scores["sys-b"]
    assert hs["mannwhitney_p"] == pytest.approx(stats.mannwhitneyu(a, b).pvalue)
    assert hs["welch_p"] == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)
    delta = np.mean([np.sign(x - y) for x in a for y in b])  # Cliff's delta by its definition
    assert hs["effect_size"] == {"name": "cliffs_delta", "value": pytest.approx(delta)}
    j = next(c for c in answer["comparisons"] if c["judge"] == "judge-1" and c["dimension"] == "overall")
    ja, jb = ([r["overall"] for r in judged(planted, s)] for s in fx.PLANTED)
    assert j["mannwhitney_p"] == pytest.approx(stats.mannwhitneyu(ja, jb).pvalue)
    assert j["welch_p"] == pytest.approx(stats.ttest_ind(ja, jb, equal_var=False).pvalue)


def test_bad_parameters_name_the_field(session):
    cases = [(dict(judge=None), "judge"), (dict(judge="nobody"), "judge"), (dict(judge="judge-1", dimension="x"),
             "dimension"), (dict(judge="judge-1", hindsight_cut="high"), "hindsight_cut"),
             (dict(judge="judge-1", judge_cut="matched"), "judge_cut"), (dict(judge="judge-2", dimension="novelty"),
             "dimension"), (dict(judge="judge-1", sort="x"), "sort")]
    for kwargs, field in cases:
        with pytest.raises(AnalysisError) as info:
            quadrants(session, selection=Selection(), **kwargs)
        assert info.value.field == field, kwargs
    with pytest.raises(AnalysisError, match="runs: no run with id 99"):
        quadrants(session, selection=Selection(runs=(99,)), judge="judge-1")


def test_csv_exports(session):
    answer = quadrants(session, selection=Selection(), judge="judge-1", page_size=None)
    ideas = list(csv.DictReader(io.StringIO(to_csv(table_rows("quadrants", answer, "ideas")))))
    assert len(ideas) == 24 and sum(r["quadrant"] == "overhyped" for r in ideas) == 5
    counts = list(csv.DictReader(io.StringIO(to_csv(table_rows("quadrants", answer)))))
    assert [r["group"] for r in counts] == ["sys-a", "sys-b", "all"] and counts[0]["true_positive_count"] == "5"
    groups = list(csv.DictReader(io.StringIO(to_csv(table_rows("systems", systems_summary(
        session, selection=Selection(), n_resamples=200))))))
    assert {"ci_low", "ci_high", "match_rate", "judge-1.overall"} <= set(groups[0])


@pytest.fixture(scope="module")
def client(store):
    from service.app import create_app
    with TestClient(create_app(Settings(home=store[0]))) as c:
        yield c


def test_http_analysis_endpoints(client):
    q = client.get("/v1/analysis/quadrants", params={"judge": "judge-1", "judge_cut": "8.5"})
    assert q.status_code == 200 and q.json()["cuts"]["judge"]["value"] == 8.5
    assert client.get("/v1/analysis/quadrants", params={"judge": "judge-1", "dimension": "bogus"}).status_code == 422
    err = client.get("/v1/analysis/quadrants", params={"hindsight_cut": "abc", "judge": "judge-1"})
    # the schema's pattern
    assert err.status_code == 422 and err.json()["detail"][0]["loc"] == ["query", "hindsight_cut"]
    assert client.get("/v1/analysis/quadrants").json()["detail"].startswith("judge: several judges")
    text = client.get("/v1/analysis/quadrants", params={"judge": "judge-1", "format": "csv", "table": "ideas"})
    assert text.headers["content-type"].startswith("text/csv") and len(text.text.strip().splitlines()) == 25
    png = client.get("/v1/analysis/quadrants.png", params={"judge": "judge-1", "systems": "sys-a"})
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    svg = client.get("/v1/analysis/quadrants.svg", params={"judge": "judge-1", "dimension": "novelty"})
    assert svg.headers["content-type"].startswith("image/svg+xml") and b"<svg" in svg.content
    assert client.get("/v1/analysis/distributions.png").content[:4] == b"\x89PNG"
    systems = client.get("/v1/analysis/systems", params={"n_resamples": 200}).json()
    assert [g["group"] for g in systems["groups"]] == ["sys-a", "sys-b"]
    # what the store does not hold is a 404, an ambiguous selection a 409, a malformed parameter a 422
    assert client.get("/v1/analysis/systems", params={"runs": 99}).status_code == 404
    assert client.get("/v1/analysis/systems", params={"systems": "nobody"}).status_code == 404
    assert client.get("/v1/analysis/quadrants", params={"judge": "nobody"}).status_code == 404
    several = client.get("/v1/analysis/quadrants")
    assert several.status_code == 409 and "choose one" in several.json()["detail"]
    assert client.get("/v1/analysis/systems", params={"cutoff": "20230601"}).status_code == 422
    corr = client.get("/v1/analysis/correlations", params={"format": "csv"}).text.splitlines()
    assert corr[0] == "x,scope,judge,dimension,n,rho,p,ci_low,ci_high"
    pk = q.json()["ideas"]["true_positive"]["items"][0]["idea_pk"]
    detail = client.get(f"/v1/analysis/ideas/{pk}").json()
    assert len(detail["matches"]) == 2 and {j["judge"] for j in detail["judges"]} == {"judge-1", "judge-2"}
    assert client.get("/v1/analysis/ideas/99999").status_code == 404
    page = client.get("/")
    assert page.status_code == 200 and "/static/dashboard.js" in page.text
    assert client.get("/static/dashboard.js").status_code == 200


def test_cli_analyze(store, tmp_path, monkeypatch):
    from indexing.settings import get_settings
    from service.cli import app
    monkeypatch.setenv("HINDSIGHT_HOME", str(store[0]))
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        out_csv, out_png = tmp_path / "q.csv", tmp_path / "q.svg"
        result = runner.invoke(app, ["analyze", "quadrants", "--judge", "judge-1", "--run", "r1", "--json",
                                     "--csv", str(out_csv), "--table", "ideas", "--plot", str(out_png)])
        assert result.exit_code == 0, result.output
        answer = json.loads(result.stdout)
        assert counts_of(answer, "sys-a") == fx.PLANTED["sys-a"]
        assert len(out_csv.read_text().strip().splitlines()) == 25 and b"<svg" in out_png.read_bytes()
        result = runner.invoke(app, ["analyze", "quadrants", "--dimension", "bogus", "--judge", "judge-1"])
        assert result.exit_code == 2 and "dimension" in result.output
        result = runner.invoke(app, ["analyze", "systems", "--system", "sys-b", "--json", "--n-resamples", "200"])
        assert result.exit_code == 0 and [g["group"] for g in json.loads(result.stdout)["groups"]] == ["sys-b"]
        result = runner.invoke(app, ["analyze", "correlations", "--judge", "judge-1"])
        assert result.exit_code == 0 and "novelty" in result.output
    finally:
        get_settings.cache_clear()


def test_csv_export_defuses_formula_text():
    from service.analyses.export import to_csv

    text = to_csv([{"idea_id": "=HYPERLINK(\"x\")", "title": "-2+3", "score": -0.5, "note": None}])
    assert text.splitlines()[1] == '"\'=HYPERLINK(""x"")",\'-2+3,-0.5,'


def test_direction_level_reads_the_direction_score(tmp_path):
    from sqlalchemy import select

    from indexing.models import Score
    from service.analyses.selection import load_ideas

    home = tmp_path / "home"
    fx.analysis_store(home)
    with session_scope(Settings(home=home).db_path) as s:
        unmatched = s.scalars(select(Score).where(Score.matched.is_(False)).order_by(Score.id)).first()
        unmatched.matcher, unmatched.direction_score, unmatched.n_direction_matches = "hybrid", 0.8, 2
        pk = unmatched.idea_pk
    with session_scope(Settings(home=home).db_path) as s:
        realised = load_ideas(s, Selection()).set_index("idea_pk")
        direction = load_ideas(s, Selection(level="direction")).set_index("idea_pk")
        assert (realised.loc[pk, "score"], bool(realised.loc[pk, "matched"])) != (0.8, True)
        assert (direction.loc[pk, "score"], bool(direction.loc[pk, "matched"])) == (0.8, True)
        others = direction.index != pk  # dense scores have no direction level: they keep their score
        assert (direction.loc[others, "score"] == realised.loc[others, "score"]).all()
        summary = systems_summary(s, selection=Selection(level="direction"), n_resamples=200)
        assert summary["selection"]["level"] == "direction"
        with pytest.raises(AnalysisError, match="level"):
            load_ideas(s, Selection(level="approach"))


def test_the_matched_cut_names_the_matcher_and_thresholds_the_scores_were_made_with(tmp_path):
    from sqlalchemy import update

    from indexing.models import Score

    home = tmp_path / "home"
    fx.analysis_store(home)
    with session_scope(Settings(home=home).db_path) as s:
        rule = quadrants(s, selection=Selection(), judge="judge-1")["cuts"]["hindsight"]["rule"]
        assert "at least one realised match by dense matcher: cosine ≥ θ 0.5;" in rule, rule
    hybrid = {"direction": {"facets": 0.52, "text": 0.6}, "method": {"facets": 0.31, "text": 0.45}}
    with session_scope(Settings(home=home).db_path) as s:
        s.execute(update(Score).values(matcher="hybrid", matcher_version="hybrid-t", thresholds=hybrid))
    with session_scope(Settings(home=home).db_path) as s:
        for level in ("realised", "direction"):
            rule = quadrants(s, selection=Selection(level=level), judge="judge-1")["cuts"]["hindsight"]["rule"]
            assert f"at least one {level} match by hybrid matcher hybrid-t: p direction ≥ facets 0.52/text 0.60, " \
                   "p method ≥ facets 0.31/text 0.45 (realised: both);" in rule, rule
            assert "theta" not in rule and "θ" not in rule
