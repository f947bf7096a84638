"""Labels on both sides of the cutoff: the forward rates read only labels on papers from the cutoff on, each prior-art
class gets matcher, labels_only and ppi from ideas labelled on both sides, and the agreement is measured on the
look-back candidates too (against an independent count)."""

from datetime import date

import pytest

from indexing.db import session_scope
from indexing.models import Idea, Match, Paper, Run, Score
from service.analyses.selection import Selection
from service.labels.draws import draw
from service.labels.estimates import labelled_summary
from service.labels.models import Label
from service.labels.sides import labelled_classes, side_of
from service.prior_art.classes import class_of
from service.prior_art.models import PriorArt, PriorArtMatch

CUTOFF = date(2024, 1, 1)

# idea -> (forward truth, look-back truth, stored forward call, stored look-back call, labelled sides);
# a truth or call is the label of its side's first candidate ("none", "direction" or "realised")
PLANTED = {
    "i01": ("realised", "none", "realised", "none", "both"),        # anticipated, called so
    "i02": ("realised", "realised", "realised", "none", "both"),    # recalled, called anticipated
    "i03": ("none", "realised", "none", "realised", "both"),        # already published, called so
    "i04": ("none", "none", "none", "none", "both"),                # unrealised
    "i05": ("none", "direction", "none", "direction", "both"),      # unrealised; direction already_published
    "i06": ("direction", "none", "none", "none", "both"),           # unrealised; direction anticipated, missed
    "i07": ("none", "none", "realised", "none", "both"),            # unrealised, called anticipated
    "i08": ("realised", "none", "realised", "none", "after"),       # forward side only: in no class rate
    "i09": ("none", "realised", "none", "realised", "before"),      # look-back only: in no forward rate
    "i10": ("none", "none", "none", "none", "unknown"),             # no look-back window: class unknown
}


def _plant(home) -> None:
    with session_scope(home / "hindsight.db") as session:
        run = Run(system="sys", label="r1")
        session.add(run)
        session.flush()
        for idea_id, (_, _, f_call, b_call, sides) in PLANTED.items():
            idea = Idea(run_id=run.id, idea_id=idea_id, problem=f"P {idea_id}", method=f"M {idea_id}")
            session.add(idea)
            session.flush()
            score = Score(idea_pk=idea.pk, score=0.5 if f_call == "realised" else 0.0, matched=f_call == "realised",
                          model="test-model", theta=0.5, index_version="v1", cutoff=CUTOFF,
                          window_end=date(2025, 12, 31), top_k=2, matcher="hybrid",
                          n_direction_matches=int(f_call != "none"))
            session.add(score)
            session.flush()
            for r in (1, 2):
                for side, day in (("a", date(2024, 6, 1)), ("b", date(2023, 3, 1))):
                    pid = f"{idea_id}-{side}{r}"
                    session.add(Paper(paper_id=pid, source="test", title=pid, abstract=f"Abstract {pid}.",
                                      publication_date=day, date_rule="exact", year=day.year, venue="ACL",
                                      citation_count=1, title_key=f"{pid} {day.year}", content_hash=pid))
                call = f_call if r == 1 else "none"
                session.add(Match(score_id=score.id, rank=r, paper_id=f"{idea_id}-a{r}", title="t", venue="ACL",
                                  year=2024, citations=1, similarity=0.8, impact=0.5,
                                  above_threshold=call == "realised", realised=call == "realised",
                                  direction=call != "none", p_realised=0.5, p_direction=0.5))
            if sides != "unknown":
                before = b_call != "none"
                pa = PriorArt(score_id=score.id, lookback_days=730, requested_start=date(2022, 1, 1),
                              start=date(2022, 1, 1), end=date(2023, 12, 31), clipped=False, papers=20,
                              status="known", class_realised=class_of(f_call == "realised", b_call == "realised"),
                              class_direction=class_of(f_call != "none", before),
                              realised_before=b_call == "realised", direction_before=before)
            else:
                pa = PriorArt(score_id=score.id, lookback_days=730, requested_start=date(2022, 1, 1), start=None,
                              end=date(2023, 12, 31), clipped=True, papers=0, status="unknown",
                              class_realised="unknown", class_direction="unknown")
            session.add(pa)
            session.flush()
            if sides != "unknown":
                for r in (1, 2):
                    call = b_call if r == 1 else "none"
                    session.add(PriorArtMatch(prior_art_id=pa.id, rank=r, paper_id=f"{idea_id}-b{r}", title="t",
                                              year=2023, publication_date=date(2023, 3, 1), similarity=0.7,
                                              realised=call == "realised", direction=call != "none"))
        session.flush()


def _label(home) -> None:
    with session_scope(home / "hindsight.db") as session:
        ideas = {i.idea_id: i.pk for i in session.query(Idea)}
        for idea_id, (f_truth, b_truth, _, _, sides) in PLANTED.items():
            todo = []
            if sides in ("both", "after", "unknown"):
                todo += [(f"{idea_id}-a1", f_truth), (f"{idea_id}-a2", "none")]
            if sides in ("both", "before"):
                todo += [(f"{idea_id}-b1", b_truth), (f"{idea_id}-b2", "none")]
            for pid, lab in todo:
                session.add(Label(idea_pk=ideas[idea_id], paper_id=pid, annotator="ann", label=lab))


@pytest.fixture
def planted(settings):
    _plant(settings.home)
    with session_scope(settings.db_path) as session:
        draw(session, run="r1", n=len(PLANTED), seed=1)
    _label(settings.home)
    with session_scope(settings.db_path) as session:
        return labelled_summary(session, selection=Selection(), shown=2)


def test_side_of_a_paper():
    assert side_of(date(2023, 12, 31), CUTOFF) == "before"
    assert side_of(CUTOFF, "2024-01-01") == "after"
    assert side_of(None, CUTOFF) == "after"
    assert labelled_classes({"p": ("direction", None)}, {"q": ("realised", None)}) == {
        "realised": "already_published", "direction": "recalled"}


def test_forward_rates_read_only_labels_from_the_cutoff_on(planted):
    g = planted["groups"][0]
    forward = {k: v for k, v in PLANTED.items() if v[4] in ("both", "after", "unknown")}
    # i09 is labelled on the look-back side only: not in the forward sample, and its 'realised' there is no
    # realisation after the cutoff (the old code counted it, and i03's and i05's look-back labels too)
    assert g["realised_rate"]["n_labelled"] == len(forward) == 9
    assert g["realised_rate"]["labels_only"]["value"] == pytest.approx(
        sum(v[0] == "realised" for v in forward.values()) / 9)
    assert g["direction_rate"]["labels_only"]["value"] == pytest.approx(
        sum(v[0] != "none" for v in forward.values()) / 9)


def test_each_class_rate_from_ideas_labelled_on_both_sides(planted):
    classes = planted["groups"][0]["classes"]
    assert classes["known"] == 9 and classes["unknown"] == 1
    both = {k: v for k, v in PLANTED.items() if v[4] == "both"}
    for level, hit in (("realised", lambda lab: lab == "realised"), ("direction", lambda lab: lab != "none")):
        truth = [class_of(hit(v[0]), hit(v[1])) for v in both.values()]
        called = [class_of(hit(v[2]), hit(v[3])) for k, v in PLANTED.items() if v[4] != "unknown"]
        total = 0.0
        for cls in ("anticipated", "recalled", "already_published", "unrealised"):
            est = classes[level][cls]
            assert est["n_labelled"] == len(both) == 7
            assert est["n_unlabelled"] == 2  # i08 (forward side only) and i09 (look-back only)
            assert est["labels_only"]["value"] == pytest.approx(truth.count(cls) / 7)
            assert est["matcher"] == pytest.approx(called.count(cls) / 9)
            assert est["ppi"]["ci"][0] <= est["ppi"]["ci"][1]
            total += est["labels_only"]["value"]
        assert total == pytest.approx(1.0)  # the four classes split the labelled ideas


def test_agreement_on_the_look_back_side_matches_an_independent_count(planted):
    lookback = planted["agreement"]["lookback"]["matcher"]
    labelled = {k: v for k, v in PLANTED.items() if v[4] in ("both", "before")}
    assert lookback["ideas"] == len(labelled) == 8
    for level, hit in (("realised", lambda lab: lab == "realised"), ("direction", lambda lab: lab != "none")):
        tp = sum(hit(v[1]) and hit(v[3]) for v in labelled.values())
        fn = sum(hit(v[1]) and not hit(v[3]) for v in labelled.values())
        fp = sum(not hit(v[1]) and hit(v[3]) for v in labelled.values())
        pair = lookback["pair"][level]
        assert (pair["tp"], pair["fn"], pair["fp"], pair["n"]) == (tp, fn, fp, 2 * len(labelled))
    # the forward agreement reads forward labels only: no look-back paper is a missed forward match
    overall = planted["agreement"]["overall"]["matcher"]["pair"]["direction"]
    assert overall["n"] == 2 * sum(v[4] in ("both", "after", "unknown") for v in PLANTED.values())


def test_the_draw_sheet_covers_both_sides_and_import_checks_each_row_side(settings):
    from service.labels.sheets import sheet_rows, to_jsonl
    from service.labels.store import ImportRejected, import_labels

    _plant(settings.home)
    with session_scope(settings.db_path) as session:
        made = draw(session, run="r1", n=len(PLANTED), seed=1)
        rows = sheet_rows(session, draws=[made["draws"][0]["draw"]], candidates=2)
    by_idea: dict[str, list[str]] = {}
    for r in rows:
        by_idea.setdefault(r["idea_id"], []).append(f"{r['side']}:{r['paper_id']}")
    assert by_idea["i01"] == ["after:i01-a1", "after:i01-a2", "before:i01-b1", "before:i01-b2"]
    assert by_idea["i10"] == ["after:i10-a1", "after:i10-a2"]  # no look-back side stored: no 'before' rows
    for r in rows:
        r["label"], r["annotator"] = "none", "sheet"
    with session_scope(settings.db_path) as session:
        report = import_labels(session, to_jsonl(rows).encode(), name="sheet.jsonl")
        assert report.labels == len(rows) == 4 * 9 + 2
    wrong = [dict(rows[0], side="before"), dict(rows[2], side="after")]
    with session_scope(settings.db_path) as session:
        with pytest.raises(ImportRejected) as exc:
            import_labels(session, to_jsonl(wrong).encode(), name="wrong.jsonl")
    found = {(e.line, e.field): e.message for e in exc.value.report.errors}
    assert set(found) == {(1, "side"), (2, "side")}
    assert "published 2024-06-01, on or after the cutoff 2024-01-01" in found[(1, "side")]


def test_a_system_with_no_labels_beside_one_with_them(settings):
    """The class rates of a group without labelled ideas are the matcher's alone; its differences are None."""
    _plant(settings.home)
    with session_scope(settings.db_path) as session:
        other = Run(system="sys2", label="r2")
        session.add(other)
        session.flush()
        for n in range(3):
            idea = Idea(run_id=other.id, idea_id=f"j{n}", problem="P", method="M")
            session.add(idea)
            session.flush()
            score = Score(idea_pk=idea.pk, score=0.0, matched=False, model="test-model", theta=0.5,
                          index_version="v1", cutoff=CUTOFF, window_end=date(2025, 12, 31), top_k=2,
                          matcher="hybrid", n_direction_matches=0)
            session.add(score)
            session.flush()
            session.add(PriorArt(score_id=score.id, lookback_days=730, requested_start=date(2022, 1, 1),
                                 start=date(2022, 1, 1), end=date(2023, 12, 31), clipped=False, papers=20,
                                 status="known", class_realised="already_published" if n else "unrealised",
                                 class_direction="already_published" if n else "unrealised",
                                 realised_before=bool(n), direction_before=bool(n)))
    with session_scope(settings.db_path) as session:
        draw(session, run="r1", n=len(PLANTED), seed=1)
    _label(settings.home)
    with session_scope(settings.db_path) as session:
        answer = labelled_summary(session, selection=Selection(), shown=2)
    sys2 = next(g for g in answer["groups"] if g["group"] == "sys2")
    est = sys2["classes"]["realised"]["already_published"]
    assert est["matcher"] == pytest.approx(2 / 3) and est["n_labelled"] == 0
    diff = answer["differences"][0]["classes"]["realised"]["already_published"]
    assert diff is None or diff["matcher"] is not None
