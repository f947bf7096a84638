"""The judge's openai backend against a real loopback server replaying chat replies (tests/fixtures/judge): logprobs
present, absent, a malformed JSON answer, an out-of-range rating, 429 and timeouts; a stored run judged end to end
through it, cached, exported and imported back."""

import json
import math
from pathlib import Path

import pytest
from sqlalchemy import select

from indexing.db import session_scope
from indexing.models import Idea, JudgeAnswer, JudgeScore, Run
from indexing.settings import Settings
from service.judge_scores import import_judge_scores
from service.llm_judge import pointwise, prompts
from service.llm_judge.backends import OpenAIJudge
from service.llm_judge.prompts import DIMENSIONS
from tests.helpers import FIXTURES, changed
from tests.replay_server import Replay

JUDGE = FIXTURES / "judge"
KEY = "sk-judge-5Hq8Vb2Mx7Lp1Zc9Rt4Yw6Kd3Nf0Gj77"


def reply(name: str) -> bytes:
    return (JUDGE / name).read_bytes()


def by_dimension(**names: str):
    """A chat responder answering each dimension's question with its own reply."""
    def answer(body: dict) -> bytes:
        asked = body["messages"][-1]["content"]
        for dim, name in names.items():
            if asked.endswith(prompts.PAPER_V1.rate[dim]):
                return reply(name)
        return reply(names.get("default", "rating_text_8.json"))
    return answer


def expected(pairs: list[tuple[str, float]]) -> float:
    """The expected rating over the rating tokens of one top-logprobs list, by hand."""
    probs = [(int(t), math.exp(lp)) for t, lp in pairs if t.strip() in prompts.RATINGS]
    return sum(r * p for r, p in probs) / sum(p for _, p in probs)


# " 7" (a leading space) is the rating 7 too; "The" is no rating
E7 = expected([("7", -0.35), ("8", -1.45), ("6", -2.6), ("9", -4.1), ("5", -5.3), ("10", -7.2), ("4", -9.5),
               (" 7", -10.1)])
# "1" then "0": P("1") = e^-0.22 is split by P("0" | "1") = e^-0.105
_P1, _GO = math.exp(-0.22), math.exp(-0.105)
_SPLIT = {"10": _P1 * _GO, "1": _P1 * (1 - _GO), "9": math.exp(-1.9), "8": math.exp(-2.8), "7": math.exp(-4.6)}
E10 = sum(int(k) * v for k, v in _SPLIT.items()) / sum(_SPLIT.values())
E6 = expected([("6", -0.7), ("5", -1.2), ("7", -1.9), ("4", -3.9)])


def fast(tmp_path: Path, url: str, home: Path | None = None, **overrides) -> Settings:
    llm = dict(judge_url=url, judge_model="judge-model", judge_api_key=KEY, verifier_pace=0, verifier_budget=1000,
               retry={"timeout": 0.3, "attempts": 3, "backoff_min": 0.01, "backoff_max": 0.05, "max_wait": 5})
    return Settings(home=home or tmp_path / "home", llm={**llm, **overrides})


def judge_for(r: Replay, tmp_path: Path, **overrides) -> OpenAIJudge:
    return OpenAIJudge.from_settings(fast(tmp_path, r.url + "/v1", **overrides))


def chat(r: Replay) -> list[dict]:
    return r.requests("v1/chat/completions")


def rate(judge: OpenAIJudge, idea: str = "Problem: p.\nMethod: m.") -> list:
    task = prompts.PAPER_V1.tasks["rate"]
    return judge.ask(task, prompts.rate_prefix(idea), [prompts.PAPER_V1.rate[d] for d in DIMENSIONS])


@pytest.mark.parametrize("name,value", [("rating_logprobs_7.json", E7), ("rating_logprobs_split_10.json", E10),
                                        ("rating_logprobs_bold_6.json", E6)])
def test_logprobs_give_the_expected_rating(replay, tmp_path, name, value):
    from service.llm_judge.cache import value_of

    r = replay(chat=lambda body: reply(name))
    readings = rate(judge_for(r, tmp_path))
    assert [x.source for x in readings] == ["logprobs"] * 4
    assert sum(readings[0].probs.values()) == pytest.approx(1.0)
    assert value_of("rate", readings[0]) == pytest.approx(value, abs=1e-9)
    # one request per dimension, the idea first so an endpoint's prefix cache serves the other three
    sent = chat(r)
    assert len(sent) == 4 and all(e["body"]["logprobs"] is True and e["body"]["temperature"] == 0 for e in sent)
    users = [e["body"]["messages"][-1]["content"] for e in sent]
    assert len({u[:u.index("Rate")] for u in users}) == 1
    assert sent[0]["headers"]["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("name,label", [("rating_text_8.json", "8"), ("rating_json_9.json", "9")])
def test_without_logprobs_the_text_is_read(replay, tmp_path, name, label):
    r = replay(chat=lambda body: reply(name))
    [first, *_] = rate(judge_for(r, tmp_path))
    assert (first.label, first.source, first.probs) == (label, "parsed", None)


@pytest.mark.parametrize("name,reason", [("rating_json_malformed.json", "malformed JSON answer"),
                                         ("rating_text_12.json", "rating 12 outside 1-10"),
                                         ("rating_text_refusal.json", "no number in the answer")])
def test_an_unreadable_answer_is_invalid_with_its_reason_and_not_retried(replay, tmp_path, name, reason):
    r = replay(chat=lambda body: reply(name))
    readings = rate(judge_for(r, tmp_path))
    assert all(x.label is None and x.source == "invalid" and reason in (x.reason or "") for x in readings)
    assert len(chat(r)) == 4  # an answer that cannot be read is the answer: asking again would repeat it


def test_429_and_a_timeout_are_retried_then_answered(replay, tmp_path):
    r = replay(chat=lambda body: reply("rating_logprobs_7.json"))
    r.fault("chat", 0, "reply:fault_429_openai.json", "slow:1.0")
    readings = rate(judge_for(r, tmp_path))
    assert [x.source for x in readings] == ["logprobs"] * 4
    assert len(chat(r)) == 6  # the 429 and the timed-out request, then four answers


def seeded_run(settings: Settings, n: int = 3, label: str = "r1") -> int:
    with session_scope(settings.db_path) as session:
        run = Run(system="sys", label=label)
        session.add(run)
        session.flush()
        for i in range(n):
            session.add(Idea(run_id=run.id, idea_id=f"i{i}", problem=f"Problem number {i} about topic {i}.",
                             method=f"Method number {i}.", topic="t"))
        return run.id


def test_a_run_judged_through_the_endpoint_counts_invalid_answers_and_caches(replay, settings, tmp_path):
    r = replay(chat=by_dimension(novelty="rating_logprobs_7.json", feasibility="rating_text_12.json",
                                 impact="rating_json_malformed.json", overall="rating_logprobs_split_10.json"))
    s = fast(tmp_path, r.url + "/v1", home=settings.home)
    run_id = seeded_run(s)
    report = pointwise.judge_run(s.db_path, run_id, judge=OpenAIJudge.from_settings(s), prompt=prompts.PAPER_V1)
    assert report.judge == "judge-model@paper-v1" and report.new_calls == 12 and report.judged == 3
    assert report.invalid == {"novelty": 0, "feasibility": 3, "impact": 3, "overall": 0}
    assert report.sources == {"logprobs": 6, "invalid": 6}
    with session_scope(s.db_path) as session:
        rows = session.scalars(select(JudgeScore).where(JudgeScore.judge == report.judge)).all()
        assert [(x.novelty, x.feasibility, x.impact, x.overall) for x in rows] == [
            (pytest.approx(E7), None, None, pytest.approx(E10))] * 3
        reasons = {a.reason for a in session.scalars(select(JudgeAnswer).where(JudgeAnswer.source == "invalid"))}
        assert any("outside 1-10" in x for x in reasons) and any("malformed JSON" in x for x in reasons)
    again = pointwise.judge_run(s.db_path, run_id, judge=OpenAIJudge.from_settings(s), prompt=prompts.PAPER_V1)
    assert (again.new_calls, again.cached, again.invalid) == (0, 12, report.invalid)
    assert len(chat(r)) == 12

    # export writes what import reads, and importing it back changes nothing
    with session_scope(s.db_path) as session:
        exported, empty = pointwise.export_rows(session, run_id=run_id, judge=report.judge)
    assert empty == 0 and [set(x) for x in exported] == [{"idea_id", "judge", "system", "run", "novelty",
                                                          "overall"}] * 3
    with session_scope(s.db_path) as session:
        back = import_judge_scores(session, pointwise.to_jsonl(exported).encode(), name="export.jsonl")
    assert (back.rows, back.unchanged, back.inserted, back.updated) == (3, 3, 0, 0)


def test_a_spent_endpoint_stops_the_run_and_a_rerun_resumes(replay, settings, tmp_path):
    r = replay(chat=lambda body: reply("rating_text_8.json"))
    s = fast(tmp_path, r.url + "/v1", home=settings.home, verifier_budget=6)
    run_id = seeded_run(s)
    first = pointwise.judge_run(s.db_path, run_id, judge=OpenAIJudge.from_settings(s), prompt=prompts.PAPER_V1)
    assert first.judged == 1 and first.left == 2 and "budget" in (first.stopped or "")
    assert KEY not in json.dumps(first.as_dict())
    rest = pointwise.judge_run(s.db_path, run_id, judge=OpenAIJudge.from_settings(changed(
        s, llm={"verifier_budget": 100})), prompt=prompts.PAPER_V1)
    assert (rest.judged, rest.new_calls, rest.cached, rest.stopped) == (3, 8, 4, None)
