"""The judge checked on InnoEval's own files: the decision class of each paper (points) and the preferred paper of
each pair, asked in both orders (pairs); evaluated by the product's InnoEval metrics (service.metrics.innoeval),
with the order-swap flip rate by the novelty audit's flip metric. An answer that cannot be read is a row without a
valid prediction, so the strict metric counts it wrong."""

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from indexing.llm import ModelUnavailable
from service.llm_judge import prompts
from service.llm_judge.backends import Judge
from service.llm_judge.cache import AnswerCache, register, text_hash
from service.llm_judge.prompts import DECISIONS, PromptVersion
from service.metrics.innoeval import pair_key, score_pairs, score_points
from service.metrics.novelty import flip_count
from service.metrics.parsing import MetricsInputError, check_records, get_id

Progress = Callable[[int, int], None] | None


def _paper(record: Mapping[str, Any], *, index: int, side: str | None = None) -> tuple[str, str]:
    item = record.get(side) if side else record
    if not isinstance(item, Mapping):
        raise MetricsInputError("expected an object", source="gold", index=index, field=side)
    paper_id = get_id(item, "paper_id", source="gold", index=index)
    return paper_id, prompts.paper_text(str(item.get("title") or ""), str(item.get("abstract") or ""))


def _answer(cache: AnswerCache, judge: Judge, revision: str, task: str, prefix: str, question_key: str,
            question: str, prompt: PromptVersion, key: str, counts: dict[str, int]) -> tuple[str | None, Any]:
    before = judge.calls
    answer, asked = cache.answer(revision, task, key, question_key,
                                 lambda: judge.ask(prompt.tasks[task], prefix, [question])[0])
    counts["new_calls"] += judge.calls - before
    counts["cached"] += not asked
    return answer.label, answer


def _begin(db_path: Path, judge: Judge, prompt: PromptVersion) -> tuple[str, str, AnswerCache, dict[str, int]]:
    """The judge's (name, revision), its cache and the call counters of one pass over a file."""
    name, revision = register(db_path, judge, prompt, 1)
    return name, revision, AnswerCache(db_path), {"new_calls": 0, "cached": 0}


def judge_points(db_path: Path, gold: Sequence[Mapping[str, Any]], *, judge: Judge, prompt: PromptVersion,
                 progress: Progress = None) -> dict[str, Any]:
    """The decision of each gold paper (the most probable of reject / poster / spotlight / oral), evaluated."""
    started, gold = time.perf_counter(), check_records(gold, source="gold")
    name, revision, cache, counts = _begin(db_path, judge, prompt)
    rows: list[dict[str, Any]] = []
    stopped: str | None = None
    for index, record in enumerate(gold):
        paper_id, text = _paper(record, index=index)
        try:
            label, stored = _answer(cache, judge, revision, "points", prompts.paper_prefix(text), "decision",
                                    prompt.points, prompt, text_hash(text), counts)
        except ModelUnavailable as exc:
            stopped = str(exc)
            break
        rows.append({"id": paper_id, "prediction": DECISIONS.get(label or ""), "probs": stored.probs,
                     "source": stored.source, "reason": stored.reason})
        if progress:
            progress(index + 1, len(gold))
    report = score_points(gold, rows).model_dump() if rows else None  # stopped before the first answer
    return {"task": "points", "judge": name, "revision": revision, "prompt": prompt.name, "items": len(gold),
            "answered": len(rows), "invalid": sum(r["prediction"] is None for r in rows), **counts,
            "report": report, "rows": rows, "stopped": stopped,
            "seconds": round(time.perf_counter() - started, 2)}


def judge_pairs(db_path: Path, gold: Sequence[Mapping[str, Any]], *, judge: Judge, prompt: PromptVersion,
                progress: Progress = None) -> dict[str, Any]:
    """The preferred paper of each gold pair, asked as the file shows it (ab) and swapped (ba); both orders
    evaluated on their own, and together (a pair whose orders disagree is a tie: no valid prediction)."""
    started, gold = time.perf_counter(), check_records(gold, source="gold")
    name, revision, cache, counts = _begin(db_path, judge, prompt)
    rows: list[dict[str, Any]] = []
    stopped: str | None = None
    for index, record in enumerate(gold):
        (a, text_a), (b, text_b) = _paper(record, index=index, side="paper_a"), _paper(record, index=index,
                                                                                        side="paper_b")
        chosen: dict[str, str | None] = {}
        try:
            for order, (first, second, t1, t2) in (("ab", (a, b, text_a, text_b)), ("ba", (b, a, text_b, text_a))):
                label, _ = _answer(cache, judge, revision, "pairs", prompts.papers_prefix(t1, t2), "preferred",
                                   prompt.pairs, prompt, text_hash(t1, t2), counts)
                chosen[order] = {"A": first, "B": second}.get(label or "")
        except ModelUnavailable as exc:
            stopped = str(exc)
            break
        both = chosen["ab"] if chosen["ab"] is not None and chosen["ab"] == chosen["ba"] else (
            "tie" if chosen["ab"] is not None and chosen["ba"] is not None else None)
        rows.append({"a": a, "b": b, "prediction": both, "prediction_ab": chosen["ab"],
                     "prediction_ba": chosen["ba"]})
        if progress:
            progress(index + 1, len(gold))
    keys = [pair_key(r["a"], r["b"]) for r in rows]
    swap = flip_count({k: r["prediction_ab"] for k, r in zip(keys, rows)},
                      {k: r["prediction_ba"] for k, r in zip(keys, rows)}, keys=keys)
    reports: dict[str, Any] = {}
    for order, field in (("both", "prediction"), ("ab", "prediction_ab"), ("ba", "prediction_ba")):
        reports[order] = score_pairs(gold, [{"a": r["a"], "b": r["b"], "prediction": r[field]} for r in rows]
                                     ).model_dump() if rows else None
    return {"task": "pairs", "judge": name, "revision": revision, "prompt": prompt.name, "items": len(gold),
            "answered": len(rows), **counts,
            "invalid_answers": sum((r["prediction_ab"] is None) + (r["prediction_ba"] is None) for r in rows),
            "ties": sum(r["prediction"] == "tie" for r in rows),
            "swap_flips": len(swap.flips), "swap_compared": len(swap.compared), "swap_flip_rate": swap.rate,
            "reports": reports, "rows": rows, "stopped": stopped, "seconds": round(time.perf_counter() - started, 2)}
