"""Pairwise novelty: which of two ideas of a stored run is more novel, asked in both orders. A pair whose two orders
name different ideas is a tie (counted); an answer that cannot be read makes the pair invalid (counted). The
order-swap flip rate is the novelty audit's flip metric over the two orders' verdicts."""

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from sqlalchemy import select

from indexing.db import session_scope
from indexing.llm import ModelUnavailable
from indexing.models import Idea, Run
from service.llm_judge import prompts
from service.llm_judge.backends import Judge
from service.llm_judge.cache import AnswerCache, register, text_hash
from service.llm_judge.prompts import PromptVersion
from service.metrics.novelty import TIE, flip_count

QUESTION = "novelty"


class PairsError(ValueError):
    """A pairs file or option that names no pair of the run."""


@dataclass
class PairJudgement:
    run_id: int
    judge: str
    revision: str
    prompt: str
    pairs: int = 0
    judged: int = 0
    new_calls: int = 0
    cached: int = 0
    consistent: int = 0
    ties: int = 0  # the two orders named different ideas
    invalid: int = 0  # an answer in either order could not be read
    invalid_answers: int = 0
    swap_flips: int = 0
    swap_compared: int = 0
    swap_flip_rate: float | None = None
    first_shown_wins: float | None = None  # share of valid answers naming the idea shown first (position bias)
    wins: dict[str, float] = field(default_factory=dict)  # idea id -> wins (a tie is half a win each)
    verdicts: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def read_pairs_file(path: Path) -> list[tuple[str, str]]:
    """(a, b) idea ids from a JSONL file or a JSON array of {"a": ..., "b": ...}."""
    text = path.read_text(encoding="utf-8-sig")
    try:
        items = json.loads(text) if text.lstrip().startswith("[") else [
            json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as exc:
        raise PairsError(f"{path}: not JSON lines or a JSON array ({exc})") from None
    out = []
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict) or item.get("a") is None or item.get("b") is None:
            raise PairsError(f"{path}: item {n}: expected an object with idea ids a and b")
        out.append((str(item["a"]), str(item["b"])))
    return out


def within_topic(ideas: dict[str, tuple[str, str | None]], limit: int | None) -> list[tuple[str, str]]:
    """Every pair of ideas that share a topic, in stored order, the first `limit` of them."""
    by_topic: dict[str, list[str]] = {}
    for idea_id, (_, topic) in ideas.items():
        if topic:
            by_topic.setdefault(topic, []).append(idea_id)
    pairs = [p for members in by_topic.values() for p in combinations(members, 2)]
    return pairs[:limit] if limit else pairs


def run_ideas(db_path: Path, run_id: int) -> dict[str, tuple[str, str | None]]:
    """idea id -> (the idea as the judge reads it, its topic), in stored order."""
    with session_scope(db_path) as session:
        if session.get(Run, run_id) is None:
            raise LookupError(f"no run {run_id}")
        rows = session.execute(select(Idea.idea_id, Idea.problem, Idea.method, Idea.text, Idea.topic)
                               .where(Idea.run_id == run_id).order_by(Idea.pk)).all()
    return {r.idea_id: (prompts.idea_block(r.problem, r.method, r.text), r.topic) for r in rows}


def judge_pairs(db_path: Path, run_id: int, *, judge: Judge, prompt: PromptVersion,
                pairs: Iterable[tuple[str, str]], progress: Callable[[int, int], None] | None = None) -> PairJudgement:
    """Ask each pair in both orders (cached per order shown); progress(done, total) after each pair."""
    started = time.perf_counter()
    ideas = run_ideas(db_path, run_id)
    pairs = list(dict.fromkeys(pairs))
    unknown = sorted({i for pair in pairs for i in pair if i not in ideas})
    if unknown:
        raise PairsError(f"idea ids not in run {run_id}: {', '.join(unknown[:10])}")
    if any(a == b for a, b in pairs):
        raise PairsError("a pair of an idea with itself")
    if not pairs:
        raise PairsError("no pair to judge")
    name, revision = register(db_path, judge, prompt, 1)
    report = PairJudgement(run_id=run_id, judge=name, revision=revision, prompt=prompt.name, pairs=len(pairs))
    cache, task = AnswerCache(db_path), prompt.tasks["pair"]
    shown: dict[str, str | None] = {}  # "first|second" -> the idea the answer names, None when unreadable
    first_wins = answered = 0
    for done, (a, b) in enumerate(pairs, start=1):
        for first, second in ((a, b), (b, a)):
            key = text_hash(ideas[first][0], ideas[second][0])
            before = judge.calls
            try:
                answer, asked = cache.answer(revision, "pair", key, QUESTION, lambda: judge.ask(
                    task, prompts.pair_prefix(ideas[first][0], ideas[second][0]), [prompt.pair])[0])
            except ModelUnavailable as exc:
                report.stopped = str(exc)
                break
            report.new_calls += judge.calls - before
            report.cached += not asked
            label = answer.label
            shown[f"{first}|{second}"] = {"A": first, "B": second}.get(label or "")
            report.invalid_answers += label is None
            answered += label is not None
            first_wins += label == "A"
        if report.stopped:
            break
        report.judged += 1
        if progress:
            progress(done, len(pairs))
    judged = pairs[:report.judged]
    keys = [f"{a}|{b}" for a, b in judged]
    ab = {f"{a}|{b}": shown[f"{a}|{b}"] for a, b in judged}
    ba = {f"{a}|{b}": shown[f"{b}|{a}"] for a, b in judged}
    swap = flip_count(ab, ba, keys=keys)
    report.swap_flips, report.swap_compared, report.swap_flip_rate = len(swap.flips), len(swap.compared), swap.rate
    report.first_shown_wins = first_wins / answered if answered else None
    for (a, b), key in zip(judged, keys):
        if ab[key] is None or ba[key] is None:
            verdict = None
            report.invalid += 1
        elif ab[key] == ba[key]:
            winner = ab[key]
            assert winner is not None
            verdict = winner
            report.consistent += 1
            report.wins[winner] = report.wins.get(winner, 0.0) + 1.0
        else:
            verdict = TIE
            report.ties += 1
            for i in (a, b):
                report.wins[i] = report.wins.get(i, 0.0) + 0.5
        report.verdicts.append({"id": key, "a": a, "b": b, "ab": ab[key], "ba": ba[key], "verdict": verdict})
    report.seconds = round(time.perf_counter() - started, 2)
    return report
