"""Prior art: the classes from the two sides, the look-back window (clipped, unknown, off), the planted ideas'
classes under both matchers, the knowledge cutoff's split, and what is stored beside each score."""

from datetime import date

import pytest
from sqlalchemy import func, select

from indexing.db import session_scope
from indexing.models import Idea, Run, Score
from indexing.settings import Settings
from indexing.versions import load_current
from service.scoring.flow import score_run
from service.ideas import ReadResult
from service.prior_art.classes import (
    AFTER_KNOWLEDGE, ALREADY_PUBLISHED, ANTICIPATED, BEFORE_KNOWLEDGE, RECALLED, UNKNOWN, UNREALISED, anticipation,
    class_of, period_of,
)
from service.prior_art.models import PriorArt, PriorArtMatch
from service.prior_art.store import prior_art_out, stored_prior_art, window_of
from service.runs import find_run
from service.schemas import IdeaIn
from tests.factories import PRIOR_ART_CUTOFF, PRIOR_ART_IDEAS, prior_art_version


def test_the_four_classes_and_unknown():
    assert class_of(True, False) == ANTICIPATED
    assert class_of(True, True) == RECALLED
    assert class_of(False, True) == ALREADY_PUBLISHED
    assert class_of(False, False) == UNREALISED
    assert class_of(True, None) == class_of(False, None) == UNKNOWN  # never "new" for want of papers


def test_period_against_the_knowledge_cutoff_and_the_anticipation_score():
    k = date(2022, 5, 1)
    assert period_of(date(2022, 4, 30), k) == BEFORE_KNOWLEDGE
    assert period_of(date(2022, 5, 1), k) == AFTER_KNOWLEDGE
    assert period_of(date(2022, 4, 30), None) is None
    assert anticipation(0.4, ANTICIPATED) == 0.4
    assert anticipation(0.4, RECALLED) == 0.0 and anticipation(0.0, UNREALISED) == 0.0
    assert anticipation(0.4, UNKNOWN) is None


@pytest.fixture(scope="module")
def planted(tmp_path_factory, minilm):
    home = tmp_path_factory.mktemp("prior-art") / "home"
    ideas = prior_art_version(home, minilm)
    settings = Settings(home=home)
    return settings, load_current(settings.indexes_dir), ideas


def run(planted, minilm, label: str, **kwargs):
    settings, loaded, ideas = planted
    read = ReadResult.of([IdeaIn(**i) for i in ideas.values()])
    kwargs = {"cutoff": PRIOR_ART_CUTOFF, **kwargs}
    return score_run(kwargs.pop("settings", settings), loaded=loaded, embedder=minilm, read=read, system="s",
                     run=label, **kwargs)


@pytest.mark.parametrize("matcher", ["dense", "hybrid"])
def test_planted_ideas_get_their_class_and_it_is_stored_beside_the_score(planted, minilm, matcher):
    settings, _, ideas = planted
    done = run(planted, minilm, matcher, matcher=matcher)
    assert [r.prior_art.class_realised for r in done.results] == list(ideas)  # type: ignore[union-attr]
    window = done.context.lookback_window
    assert window == {"start": "2021-06-01", "end": "2023-05-31", "requested_start": "2021-06-01",
                      "lookback_days": 730, "clipped": False, "papers": window["papers"], "status": "known",
                      "knowledge_cutoff": None}
    assert window["papers"] > 0 and done.context.window["start"] == PRIOR_ART_CUTOFF
    for r in done.results:
        p = r.prior_art
        assert p is not None and len(p.matches) == min(done.context.top_k, window["papers"])
        assert all("2021-06-01" <= m.publication_date <= "2023-05-31" for m in p.matches)
        assert p.realised_before == any(m.realised for m in p.matches) and p.n_realised == sum(
            m.realised for m in p.matches)
        assert all(m.direction for m in p.matches if m.realised)  # realised implies direction on this side too
        assert p.class_direction == class_of(bool(r.n_direction_matches) if matcher == "hybrid" else r.matched,
                                             p.direction_before)
        assert p.n_realised_before_knowledge is None and all(m.period is None for m in p.matches)
        if matcher == "hybrid":  # evidence for the candidates a labeller reads (HINDSIGHT_LABELS_TOP_K, 5)
            assert [m.evidence is not None for m in p.matches] == [j < 5 for j in range(len(p.matches))]
    again = run(planted, minilm, matcher, matcher=matcher)  # re-scored: replaced, not added
    with session_scope(settings.db_path) as session:
        run_id = find_run(session, matcher, "s").id
        score_ids = list(session.scalars(select(Score.id).join(Idea, Idea.pk == Score.idea_pk)
                                         .where(Idea.run_id == run_id).order_by(Idea.pk)))
        stored = stored_prior_art(session, score_ids)
        assert len(stored) == 4
        assert session.scalar(select(func.count()).select_from(PriorArtMatch).join(PriorArt).where(
            PriorArt.score_id.in_(score_ids))) == 4 * min(done.context.top_k, window["papers"])
        for sid, r in zip(score_ids, again.results):
            assert prior_art_out(stored[sid]) == r.prior_art
            assert window_of(stored[sid]) == again.context.lookback_window


def test_an_index_with_nothing_before_the_cutoff_gives_unknown_with_a_warning(planted, minilm):
    done = run(planted, minilm, "at-start", cutoff="2020-01-01", matcher="dense")
    assert {r.prior_art.class_realised for r in done.results} == {UNKNOWN}  # type: ignore[union-attr]
    assert {r.prior_art.class_direction for r in done.results} == {UNKNOWN}  # type: ignore[union-attr]
    assert all(r.prior_art.matches == [] and r.prior_art.realised_before is None  # type: ignore[union-attr]
               for r in done.results)
    assert done.context.lookback_window["status"] == "unknown" and done.context.lookback_window["start"] is None
    codes = [w["code"] for w in done.context.warnings]
    assert codes == ["prior_art_unknown"] and "not new" in done.context.warnings[0]["message"]


def test_an_empty_lookback_inside_the_index_says_what_would_fill_it(planted, minilm):
    """The index covers the window but no paper lies in it: rebuilding from an earlier date would change nothing."""
    done = run(planted, minilm, "empty-inside", cutoff="2020-01-06", lookback_days=4, matcher="dense")
    window, [warning] = done.context.lookback_window, done.context.warnings
    assert window["status"] == "unknown" and not window["clipped"] and warning["code"] == "prior_art_unknown"
    assert "index build --cutoff" not in warning["message"] and "ingest papers published then" in warning["message"]


def test_a_lookback_past_the_index_start_is_clipped_and_says_so(planted, minilm):
    done = run(planted, minilm, "clipped", lookback_days=2000, matcher="dense")
    window = done.context.lookback_window
    assert window["requested_start"] == "2017-12-09" and window["start"] == "2020-01-01" and window["clipped"]
    assert [w["code"] for w in done.context.warnings] == ["prior_art_clipped"]
    assert "2020-01-01..2023-05-31" in done.context.warnings[0]["message"]
    assert done.results[0].prior_art.class_realised == ALREADY_PUBLISHED  # type: ignore[union-attr]


def test_prior_art_off_by_setting_stores_nothing_and_a_request_turns_it_on(planted, minilm):
    settings = planted[0]
    by_setting = run(planted, minilm, "off-setting", matcher="dense",
                     settings=Settings(home=settings.home, matcher={"prior_art": False}))
    assert by_setting.context.lookback_window is None
    on = run(planted, minilm, "on", settings=Settings(home=settings.home, matcher={"prior_art": False}), prior_art=True)
    assert on.context.lookback_window is not None
    hybrid_off = run(planted, minilm, "off-hybrid", prior_art=False)  # the version's matcher: hybrid
    # the forward side is the same with the look-back side beside it (one encode and tokenisation shared)
    assert [r.model_dump(exclude={"prior_art"}) for r in on.results] == [
        r.model_dump(exclude={"prior_art"}) for r in hybrid_off.results]
    with session_scope(settings.db_path) as session:
        assert session.scalar(select(func.count()).select_from(PriorArt).join(Score).join(Idea).join(Run)
                              .where(Run.label == "off-setting")) == 0


def test_the_knowledge_cutoff_splits_prior_art_into_readable_and_later(planted, minilm):
    settings = planted[0]
    read = ReadResult.of([IdeaIn(**i) for i in planted[2].values()])
    done = score_run(settings, loaded=planted[1], embedder=minilm, read=read, system="declared", run="r",
                     knowledge_cutoff="2022-05-01", cutoff=PRIOR_ART_CUTOFF, matcher="dense")
    assert done.context.lookback_window["knowledge_cutoff"] == "2022-05-01"
    by_id = {r.id: r.prior_art for r in done.results}
    recalled, already = by_id["recalled"], by_id["already"]
    assert recalled is not None and already is not None
    assert (recalled.n_realised_before_knowledge, recalled.n_realised_after_knowledge) == (1, 0)  # 2022-03-28
    assert (already.n_realised_before_knowledge, already.n_realised_after_knowledge) == (0, 1)  # 2022-06-14
    assert all(m.period == (BEFORE_KNOWLEDGE if m.publication_date < "2022-05-01" else AFTER_KNOWLEDGE)
               for p in by_id.values() if p for m in p.matches)


def test_wilson_and_newcombe_intervals():
    from service.analyses.prior_art import newcombe, wilson

    low, high = wilson(1, 4, 0.95)  # type: ignore[misc]
    assert low == pytest.approx(0.0456, abs=1e-4) and high == pytest.approx(0.6994, abs=1e-4)
    assert wilson(0, 0, 0.95) is None
    d_low, d_high = newcombe(1, 4, 3, 4, 0.95)  # type: ignore[misc]
    assert d_low < -0.5 < d_high and -1 <= d_low and d_high <= 1


def test_systems_and_correlations_report_prior_art(planted, minilm):
    from indexing.models import JudgeScore
    from service.analyses import Selection, correlations, systems_summary

    settings, loaded, ideas = planted
    both = ReadResult.of([IdeaIn(**i) for i in ideas.values()])
    late = ReadResult.of([IdeaIn(**ideas["already_published"]), IdeaIn(**ideas["unrealised"])])
    for system, read in (("sys-all", both), ("sys-late", late)):
        score_run(settings, loaded=loaded, embedder=minilm, read=read, system=system, run="a", cutoff=PRIOR_ART_CUTOFF,
                  matcher="dense")
    with session_scope(settings.db_path) as session:  # novelty 9 for ideas without prior art, 2 with
        for idea, sc in session.execute(select(Idea, Score).join(Score).join(Run).where(
                Run.system.in_(["sys-all", "sys-late"]))).all():
            had = idea.idea_id in ("already", "recalled")
            session.add(JudgeScore(idea_pk=idea.pk, judge="j", novelty=2.0 if had else 9.0, overall=5.0 + sc.score))
    with session_scope(settings.db_path) as session:
        selection = Selection(systems=("sys-all", "sys-late"), cutoff=PRIOR_ART_CUTOFF)
        answer = systems_summary(session, selection=selection, n_resamples=200)
        groups = {g["group"]: g for g in answer["groups"]}
        every = groups["sys-all"]["prior_art"]
        rates = every["rates"]["realised"]
        assert {c: r["n"] for c, r in rates.items()} == {ANTICIPATED: 1, RECALLED: 1, ALREADY_PUBLISHED: 1,
                                                        UNREALISED: 1}
        assert rates[ANTICIPATED]["rate"] == 0.25 and rates[ANTICIPATED]["ci"][0] < 0.25 < rates[ANTICIPATED]["ci"][1]
        anticipated_score = next(r for r in score_run(
            settings, loaded=loaded, embedder=minilm, read=ReadResult.of([IdeaIn(**ideas["anticipated"])]),
            system="probe", run="p", cutoff=PRIOR_ART_CUTOFF, matcher="dense").results).score
        assert every["anticipation_score"] == pytest.approx(anticipated_score / 4, abs=1e-9)
        assert groups["sys-all"]["mean_score"] != every["anticipation_score"]  # the paper's score stays beside it
        late_rates = groups["sys-late"]["prior_art"]["rates"]["realised"]
        assert late_rates[ALREADY_PUBLISHED]["rate"] == 0.5 and late_rates[ANTICIPATED]["rate"] == 0.0
        assert groups["sys-late"]["prior_art"]["anticipation_score"] == 0.0
        metrics = {c["metric"] for c in answer["comparisons"]}
        assert {"anticipation", "rate_anticipated", "rate_already_published"} <= metrics
        diff = next(c for c in answer["comparisons"] if c["metric"] == "rate_already_published")
        assert diff["difference"] == pytest.approx(0.25 - 0.5) and diff["difference_low"] < diff["difference"]
        assert answer["prior_art"]["unknown_ideas"] == 0
        corr = correlations(session, selection=selection)["prior_art"]
        first = corr["rows"][0]
        assert (first["scope"], first["dimension"]) == ("all", "novelty")
        assert first["n"] == 6 and first["had_prior_art"] == 3 and first["rho"] == pytest.approx(-1.0)


def test_the_verifier_reads_lookback_candidates_only_when_asked(planted, minilm, replay):
    from indexing.matcher.verifier import verifier_step
    from tests.replay_server import chat_reply

    settings, loaded, ideas = planted
    chat = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    asked = Settings(home=settings.home, llm={"verifier_url": chat.url + "/v1", "verifier_model": "m",
                                              "verifier_pace": 0, "verifier_budget": 1000,
                                              "retry": {"backoff_min": 0.01, "backoff_max": 0.05}})
    step = verifier_step("openai", asked, 2)
    read = ReadResult.of([IdeaIn(**ideas["recalled"])])
    done = score_run(asked, loaded=loaded, embedder=minilm, read=read, system="s", run="verified",
                     cutoff=PRIOR_ART_CUTOFF, matcher="dense", verifier=step)
    before = done.results[0].prior_art
    assert before is not None and done.context.verifier
    assert [m.verifier is not None for m in before.matches[:3]] == [True, True, False]  # its top 2, as forward
    assert all(m.embedding_realised is not None for m in before.matches)
    assert before.class_realised == RECALLED  # the endpoint says yes to every pair on both sides
    read_pairs = len(chat.requests("v1/chat/completions"))
    assert read_pairs >= 4  # forward and look-back candidates were both read
    with session_scope(settings.db_path) as session:
        row = stored_prior_art(session, [session.scalar(select(Score.id).join(Idea).join(Run).where(
            Run.label == "verified"))])
        assert next(iter(row.values())).verifier == done.context.verifier
    plain = score_run(asked, loaded=loaded, embedder=minilm, read=read, system="s", run="plain",
                      cutoff=PRIOR_ART_CUTOFF, matcher="dense")
    assert len(chat.requests("v1/chat/completions")) == read_pairs  # no verifier asked: none read
    assert all(m.verifier is None for m in plain.results[0].prior_art.matches)  # type: ignore[union-attr]


def test_verifying_a_stored_run_reads_both_sides_and_decides_the_classes_again(planted, minilm, replay, tmp_path):
    from indexing.matcher.verifier import make_verifier
    from service.verify import verify_run
    from tests.replay_server import chat_reply

    settings, loaded, ideas = planted
    read = ReadResult.of([IdeaIn(**ideas["already_published"]), IdeaIn(**ideas["anticipated"])])
    done = score_run(settings, loaded=loaded, embedder=minilm, read=read, system="s", run="to-verify",
                     cutoff=PRIOR_ART_CUTOFF, matcher="dense")
    assert [r.prior_art.class_realised for r in done.results] == [ALREADY_PUBLISHED, ANTICIPATED]  # type: ignore
    chat = replay(chat=lambda body: chat_reply("openai_logprobs_yes.json"))
    verifier = make_verifier("openai", Settings(home=settings.home, llm={
        "verifier_url": chat.url + "/v1", "verifier_model": "m", "verifier_pace": 0, "verifier_budget": 1000}))
    assert verifier is not None
    report = verify_run(settings.db_path, done.run_id, verifier=verifier, top_k=2)
    assert report.verified == 2 and report.new_calls == 8  # two forward and two look-back pairs an idea
    with session_scope(settings.db_path) as session:
        scores = list(session.scalars(select(Score).join(Idea).where(Idea.run_id == done.run_id).order_by(Idea.pk)))
        stored = stored_prior_art(session, [s.id for s in scores])
        for s in scores:  # the endpoint says yes to every pair: realised on both sides
            prior = stored[s.id]
            assert prior.verifier == verifier.revision and prior.class_realised == RECALLED
            assert [m.verifier_p_realised is not None for m in prior.matches[:3]] == [True, True, False]
            assert prior.matches[2].embedding_realised is not None  # the embedding decision kept beside


def test_a_runs_stored_prior_art_is_read_back_in_a_fixed_number_of_queries(planted, minilm):
    from sqlalchemy import event

    from service.runs import run_scores

    settings, loaded, ideas = planted
    score_run(settings, loaded=loaded, embedder=minilm, read=ReadResult.of([IdeaIn(**ideas["recalled"])]),
              system="s", run="read-one", cutoff=PRIOR_ART_CUTOFF, matcher="dense")
    run(planted, minilm, "read-all", matcher="dense")

    def queries(label: str) -> int:
        with session_scope(settings.db_path) as session:
            found = find_run(session, label, "s")
            seen: list[str] = []
            listener = lambda *args: seen.append(args[2])  # noqa: E731 (before_cursor_execute's statement)
            event.listen(session.get_bind(), "before_cursor_execute", listener)
            try:
                answer = run_scores(session, found)
            finally:
                event.remove(session.get_bind(), "before_cursor_execute", listener)
            assert all(s["prior_art"] and s["prior_art"]["matches"] for s in answer["scores"])
            return len(seen)

    assert queries("read-all") == queries("read-one")  # the look-back matches of every score in one query


@pytest.mark.parametrize("shape", ["text", "facets"])
def test_a_pair_gets_one_decision_on_both_sides_of_the_cutoff(planted, minilm, shape):
    """hs-0010 (2023-06-05) is in the forward window at 2023-06-01 and in the look-back window at 2023-07-01: the
    same (idea, paper) pair, one index, so the same probabilities and decisions, whatever else shares each window."""
    settings, loaded, ideas = planted
    paper = PRIOR_ART_IDEAS["anticipated"]
    text = ideas["anticipated"]["text"]
    title, _, abstract = text.partition(". ")
    idea = IdeaIn(id="pair", text=text) if shape == "text" else IdeaIn(id="pair", problem=title, method=abstract)

    def scored(cutoff: str):
        return score_run(settings, loaded=loaded, embedder=minilm, read=ReadResult.of([idea]), system="s",
                         run=f"pair-{shape}-{cutoff}", cutoff=cutoff, matcher="hybrid").results[0]

    forward = next(m for m in scored("2023-06-01").matches if m.paper_id == paper)
    before = scored("2023-07-01").prior_art
    assert before is not None
    back = next(m for m in before.matches if m.paper_id == paper)
    assert forward.p_realised == pytest.approx(back.p_realised, abs=1e-6)
    assert forward.p_direction == pytest.approx(back.p_direction, abs=1e-6)
    assert (forward.realised, forward.direction) == (back.realised, back.direction)
