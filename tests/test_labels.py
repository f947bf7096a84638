"""Labels: draws (uniform, without replacement, stratified per system), a whole-file import that names line and
field and writes nothing when rejected, the export/import round trip, the agreement counts against an independent
count, estimates that keep labels outside any draw out, the CLI and the HTTP routes in process."""

import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from indexing.db import session_scope
from indexing.models import Idea, Match, Score
from service.analyses.selection import Selection
from service.app import create_app
from service.labels.draws import LabelError, draw, status
from service.labels.estimates import labelled_summary
from service.labels.models import Draw, DrawIdea, Label
from service.labels.store import ImportRejected, export_labels, import_labels
from tests.factories import labels_store

AUTH = {"Authorization": "Bearer test-token"}


@pytest.fixture
def store(settings):
    return settings, labels_store(settings.home)


def _rows(planted: dict, ids, annotator: str = "ann") -> bytes:
    """The planted truth of these ideas as labels rows (every candidate, unlabelled ones as none)."""
    lines = []
    for idea_id in ids:
        p = planted[idea_id]
        for paper, label in p["truth"].items():
            lines.append({"run": "r1", "system": p["system"], "idea_id": idea_id, "paper_id": paper, "label": label,
                          "annotator": annotator})
    return "".join(json.dumps(r) + "\n" for r in lines).encode()


def _count(session) -> int:
    return session.scalar(select(func.count(Label.id))) or 0


def test_draws_are_stratified_disjoint_seeded_and_run_out(store):
    settings, planted = store
    with session_scope(settings.db_path) as s:
        first = draw(s, run="r1", n=10, seed=5)
        assert [(d["system"], d["n"], d["available"], d["population"]) for d in first["draws"]] == [
            ("sys-a", 10, 40, 40), ("sys-b", 10, 40, 40)]
        assert first["draws"][0]["inclusion_probability"] == pytest.approx(0.25)
        second = draw(s, run="r1", n=35, seed=5, system="sys-a")  # only 30 left: takes them all
        assert [(d["n"], d["available"]) for d in second["draws"]] == [(30, 30)]
        members = list(s.scalars(select(DrawIdea.idea_pk)))
        assert len(members) == len(set(members)) == 50
        with pytest.raises(LabelError) as exc:
            draw(s, run="r1", n=1, system="sys-a")
        assert exc.value.status == 409
        with pytest.raises(LabelError, match="no run 'nope'"):
            draw(s, run="nope", n=1)
    # the same seed on the same store draws the same ideas
    with session_scope(settings.db_path) as s:
        first_ids = sorted(s.scalars(select(DrawIdea.idea_pk).where(DrawIdea.draw_id == first["draws"][0]["draw"])))
        s.query(Draw).delete()
        s.commit()
        again = draw(s, run="r1", n=10, seed=5)
        assert sorted(s.scalars(select(DrawIdea.idea_pk).where(
            DrawIdea.draw_id == again["draws"][0]["draw"]))) == first_ids


def test_import_names_line_and_field_and_writes_nothing(store):
    settings, planted = store
    good = _rows(planted, ["sys-a-000"])
    bad_lines = [
        {"run": "r1", "idea_id": "sys-a-001", "paper_id": "sys-a-001-c1", "label": "maybe", "annotator": "ann"},
        {"run": "r1", "idea_id": "no-such-idea", "paper_id": "sys-a-001-c1", "label": "none", "annotator": "ann"},
        {"run": "r9", "idea_id": "sys-a-001", "paper_id": "sys-a-001-c1", "label": "none", "annotator": "ann"},
        {"run": "r1", "idea_id": "sys-a-001", "paper_id": "ghost-paper", "label": "none", "annotator": "ann"},
        {"run": "r1", "idea_id": "sys-a-001", "paper_id": "sys-a-001-c2", "label": "none"},
    ]
    data = good + "".join(json.dumps(r) + "\n" for r in bad_lines).encode() + b"{not json\n"
    with session_scope(settings.db_path) as s:
        with pytest.raises(ImportRejected) as exc:
            import_labels(s, data, name="bad.jsonl")
        found = {(e.line, e.field) for e in exc.value.report.errors}
        assert {(6, "label"), (7, "idea_id"), (8, "run"), (9, "paper_id"), (10, "annotator"), (11, "<json>")} <= found
        assert "bad.jsonl: rejected, nothing written" in str(exc.value)
        assert "line 9: field 'paper_id': unknown paper 'ghost-paper'" in str(exc.value)
        assert _count(s) == 0
    # a contradiction inside one file is named with both lines
    twice = [{"run": "r1", "idea_id": "sys-a-002", "paper_id": "sys-a-002-c1", "label": lab, "annotator": "x"}
             for lab in ("none", "realised")]
    with session_scope(settings.db_path) as s:
        with pytest.raises(ImportRejected, match="line 2: field 'label': 'realised' contradicts line 1"):
            import_labels(s, "".join(json.dumps(r) + "\n" for r in twice).encode(), name="twice.jsonl")
        assert _count(s) == 0


def test_export_import_round_trip_is_lossless(store, tmp_path):
    settings, planted = store
    with session_scope(settings.db_path) as s:
        report = import_labels(s, _rows(planted, list(planted)[:7]), name="a.jsonl")
        assert (report.inserted, report.ideas, report.ideas_outside_draws) == (35, 7, 7)
        # a label naming a paper no candidate lists, only the store
        import_labels(s, json.dumps({"run": "r1", "idea_id": "sys-a-003", "paper_id": "outside-1",
                                     "label": "direction", "annotator": "bob"}).encode(), name="b.jsonl")
        before = export_labels(s, run="r1")
        s.query(Label).delete()
        s.commit()
        again = import_labels(s, "".join(json.dumps(r) + "\n" for r in before).encode(), name="export.jsonl")
        assert again.inserted == len(before) == 36
        assert export_labels(s, run="r1") == before
        # importing the same file again changes nothing
        assert import_labels(s, "".join(json.dumps(r) + "\n" for r in before).encode(),
                             name="export.jsonl").unchanged == 36


def test_judged_format(store):
    settings, planted = store
    row = {"idea": "sys-b-004", "reviewed": ["sys-b-004-c1", "sys-b-004-c2", "outside-1"],
           "same_problem": ["outside-1", "sys-b-004-c2"], "same_problem_and_approach": ["outside-1"]}
    with session_scope(settings.db_path) as s:
        with pytest.raises(ImportRejected, match="field 'annotator': missing"):
            import_labels(s, json.dumps(row).encode(), name="j.jsonl", run="r1")
        report = import_labels(s, json.dumps(row).encode(), name="j.jsonl", run="r1", annotator="reader")
        assert report.format == "judged" and report.inserted == 3
        got = {r["paper_id"]: r["label"] for r in export_labels(s, run="r1")}
        assert got == {"sys-b-004-c1": "none", "sys-b-004-c2": "direction", "outside-1": "realised"}
        # a row may name its run and annotator itself; an unknown field is named; an empty file is refused
        named = {"idea": "sys-b-005", "run": "r1", "annotator": "other", "reviewed": ["sys-b-005-c1"]}
        assert import_labels(s, json.dumps(named).encode(), name="k.jsonl").annotators == ["other"]
        with pytest.raises(ImportRejected, match="line 1: field 'verdict': unknown field"):
            import_labels(s, json.dumps({**named, "verdict": 1}).encode(), name="v.jsonl")
        with pytest.raises(ImportRejected, match="holds no labels rows"):
            import_labels(s, b"\n", name="empty.jsonl")


def _independent_counts(planted: dict, labelled: list[str], shown: int, db_path) -> dict:
    """tp/fp/fn/tn of the matcher's direction calls at pair level, counted by hand from the planted truth and the
    stored matches (labelled pairs plus the first `shown` candidates)."""
    tp = fp = fn = tn = 0
    with session_scope(db_path) as s:
        for idea_id in labelled:
            calls = dict(s.execute(select(Match.paper_id, Match.direction).join(Score, Score.id == Match.score_id)
                                   .join(Idea, Idea.pk == Score.idea_pk).where(Idea.idea_id == idea_id)
                                   .where(Match.rank <= shown)).all())
            for paper, label in planted[idea_id]["truth"].items():
                truth, said = label != "none", bool(calls.get(paper, False))
                tp, fp, fn, tn = tp + (truth and said), fp + (said and not truth), fn + (truth and not said), \
                    tn + (not truth and not said)
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn}


def test_estimates_keep_labels_outside_draws_out_and_agreement_matches_an_independent_count(store):
    settings, planted = store
    with session_scope(settings.db_path) as s:
        made = draw(s, run="r1", n=15, seed=11)
        drawn = {pk for d in made["draws"] for pk in s.scalars(select(DrawIdea.idea_pk)
                                                                .where(DrawIdea.draw_id == d["draw"]))}
        names = dict(s.execute(select(Idea.pk, Idea.idea_id)).all())
        drawn_ids = sorted(names[pk] for pk in drawn)
        outside = [i for i in planted if i not in drawn_ids][:9]
        import_labels(s, _rows(planted, drawn_ids + outside), name="truth.jsonl")
        answer = labelled_summary(s, selection=Selection(), shown=5)
        st = status(s, run="r1")
    assert answer["annotator"] == "ann"
    by = {g["group"]: g for g in answer["groups"]}
    for system in ("sys-a", "sys-b"):
        g = by[system]
        assert g["realised_rate"]["n_labelled"] == 15 and g["realised_rate"]["n_unlabelled"] == 25
        assert g["labelled_outside_draws"] == sum(planted[i]["system"] == system for i in outside)
        truth = [planted[i]["realised"] for i in drawn_ids if planted[i]["system"] == system]
        # labels_only is the mean of the drawn ideas' labels, nothing else
        if g["realised_rate"]["labels_only"]["method"] == "normal":
            assert g["realised_rate"]["labels_only"]["value"] == pytest.approx(sum(truth) / len(truth))
        for m in ("realised_rate", "direction_rate", "mean_score"):
            for kind in ("labels_only", "ppi"):
                lo, hi = g[m][kind]["ci"]
                assert lo <= g[m][kind]["value"] <= hi
    assert any(w["code"] == "outside_draws" for w in answer["warnings"])
    overall = answer["agreement"]["overall"]
    assert overall["ideas"] == len(drawn_ids) + len(outside)  # agreement counts every labelled idea
    mine = {k: overall["matcher"]["pair"]["direction"][k] for k in ("tp", "fp", "fn", "tn")}
    assert mine == _independent_counts(planted, drawn_ids + outside, 5, settings.db_path)
    assert [d for s_ in st["strata"] for d in s_["draws"]][0]["labelled"] == {"ann": 15}
    assert st["strata"][0]["outside_draws"]["ann"]["ideas"] == sum(planted[i]["system"] == "sys-a" for i in outside)


def test_two_annotators_kappa(store):
    settings, planted = store
    ids = list(planted)[:20]
    with session_scope(settings.db_path) as s:
        import_labels(s, _rows(planted, ids, "ann"), name="a.jsonl")
        import_labels(s, _rows(planted, ids, "bob"), name="b.jsonl")
        flip = {"run": "r1", "idea_id": ids[0], "paper_id": f"{ids[0]}-c5", "label": "direction", "annotator": "bob"}
        import_labels(s, json.dumps(flip).encode(), name="c.jsonl")
        answer = labelled_summary(s, selection=Selection(), shown=5)
    pair = answer["agreement"]["annotators"][0]
    assert (pair["a"], pair["b"], pair["ideas"]) == ("ann", "bob", 20)
    assert pair["pair"]["n"] == 100 and pair["pair"]["agree"] == 99
    assert 0 < pair["pair"]["kappa"] < 1


def test_cli_and_http(store, run_cli_here, tmp_path):
    settings, planted = store
    res = run_cli_here("label", "draw", "--run", "r1", "--n", "3", "--seed", "1", "--json")
    assert res.exit_code == 0, res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"run": "r1", "idea_id": "sys-a-000", "paper_id": "sys-a-000-c1", "label": "yes", '
                   '"annotator": "a"}\n')
    res = run_cli_here("label", "import", str(bad))
    assert res.exit_code == 2 and "line 1: field 'label'" in res.output
    with TestClient(create_app(settings)) as c:
        st = c.get("/v1/labels/status", params={"run": "r1"}).json()
        draw_id = st["strata"][0]["draws"][0]["draw"]
        item = c.get(f"/v1/labels/draws/{draw_id}/item", params={"annotator": "web", "top_k": 3}).json()
        assert item["progress"] == {"labelled": 0, "drawn": 3}
        assert len(item["idea"]["candidates"]) == 3 and item["idea"]["candidates"][0]["abstract"]
        body = {"run": "r1", "idea_id": item["idea"]["idea_id"], "paper_id": item["idea"]["candidates"][0]["paper_id"],
                "label": "direction", "annotator": "web"}
        assert c.post("/v1/labels", json=body).status_code == 401
        assert c.post("/v1/labels", json=body, headers=AUTH).status_code == 200
        assert c.post("/v1/labels", json={**body, "label": "maybe"}, headers=AUTH).status_code == 422
        nxt = c.get(f"/v1/labels/draws/{draw_id}/item", params={"annotator": "web"}).json()
        assert nxt["progress"]["labelled"] == 1 and nxt["idea"]["idea_id"] != body["idea_id"]
        exported = c.get("/v1/labels/export", params={"run": "r1"}).text
        assert json.loads(exported.splitlines()[0])["label"] == "direction"
        up = c.post("/v1/labels/import", files={"file": ("x.jsonl", bad.read_bytes())}, headers=AUTH)
        assert up.status_code == 422 and up.json()["detail"]["errors"][0]["field"] == "label"
        est = c.get("/v1/labels/estimates").json()
        assert {g["group"] for g in est["groups"]} == {"sys-a", "sys-b"}
        assert c.post("/v1/labels/draws", json={"run": "r1", "n": 2}, headers=AUTH).status_code == 201
    res = run_cli_here("analyze", "systems", "--labels", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["annotator"] == "web"
    res = run_cli_here("label", "status", "--run", "r1")
    assert res.exit_code == 0 and "web: 1 of 3" in res.output


def test_twenty_draws_of_25_cover_the_truth_and_ppi_is_narrower_where_the_matcher_agrees(settings):
    """The issue's bar on a planted store (the matcher's calls agree with the truth on 85% of ideas): over 20
    independent draws of 25 labelled ideas per system, each 95% interval of the realised and direction rates and of
    the difference of realised rates covers the truth in at least 17; ppi is narrower on average than labels_only."""
    planted = labels_store(settings.home, per_system=100, seed=9)
    truth = {s: {m: sum(p[m] for p in planted.values() if p["system"] == s) / 100 for m in ("realised", "direction")}
             for s in ("sys-a", "sys-b")}
    covered: dict[tuple, int] = {}
    widths: dict[str, list[float]] = {"labels_only": [], "ppi": []}
    with session_scope(settings.db_path) as s:
        import_labels(s, _rows(planted, list(planted)), name="truth.jsonl")
        for rep in range(20):
            s.query(Draw).delete()
            s.commit()
            draw(s, run="r1", n=25, seed=rep)
            answer = labelled_summary(s, selection=Selection(), shown=5)
            for g in answer["groups"]:
                for m in ("realised", "direction"):
                    for kind in ("labels_only", "ppi"):
                        lo, hi = g[f"{m}_rate"][kind]["ci"]
                        key = (g["group"], m, kind)
                        covered[key] = covered.get(key, 0) + (lo <= truth[g["group"]][m] <= hi)
                        widths[kind].append(hi - lo)
            d = answer["differences"][0]["realised_rate"]
            target = truth["sys-a"]["realised"] - truth["sys-b"]["realised"]
            for kind in ("labels_only", "ppi"):
                lo, hi = d[kind]["ci"]
                covered[("diff", kind)] = covered.get(("diff", kind), 0) + (lo <= target <= hi)
    assert min(covered.values()) >= 17, covered
    mean = {k: sum(v) / len(v) for k, v in widths.items()}
    assert mean["ppi"] < 0.9 * mean["labels_only"], mean


def test_a_verified_run_is_measured_for_the_verifier_and_the_matcher_apart(store):
    """On a verified score the stored calls are the verifier's and the embedding's are kept beside them: the
    agreement reads the matcher from the embedding's and the verifier from the stored ones."""
    settings, planted = store
    with session_scope(settings.db_path) as s:
        before = labelled_summary(s, selection=Selection(), shown=5)  # no labels yet: nothing measured
        assert before["agreement"]["overall"]["verifier"] is None
        import_labels(s, _rows(planted, list(planted)), name="truth.jsonl")
        matcher_before = labelled_summary(s, selection=Selection(), shown=5)["agreement"]["overall"]["matcher"]
        for score, idea_id in s.execute(select(Score, Idea.idea_id).join(Idea, Idea.pk == Score.idea_pk)
                                        .where(Idea.idea_id.like("sys-b-%"))).all():
            score.verifier = "test-verifier"
            for m in score.matches:  # a verifier that reads every candidate right
                label = planted[idea_id]["truth"][m.paper_id]
                m.embedding_realised, m.embedding_direction = m.realised, m.direction
                m.realised, m.direction = label == "realised", label != "none"
                m.verifier_p_direction = 0.9 if label != "none" else 0.1
                m.verifier_p_realised = 0.9 if label == "realised" else 0.1
                m.verifier_source = "test"
        s.commit()
        after = labelled_summary(s, selection=Selection(), shown=5)
    agreement = after["agreement"]["overall"]
    assert after["annotator"] == "ann" and agreement["ideas"] == 80  # no draw yet: the first annotator of all
    assert matcher_before["pair"]["direction"]["n"] > 0
    assert agreement["matcher"]["pair"] == matcher_before["pair"]  # the embedding's calls, unchanged
    verifier = agreement["verifier"]
    assert verifier["ideas"] == 40
    for decision in ("realised", "direction"):
        assert verifier["pair"][decision]["fp"] == verifier["pair"][decision]["fn"] == 0
    assert after["agreement"]["groups"]["sys-a"]["verifier"] is None
