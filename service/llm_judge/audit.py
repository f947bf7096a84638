"""How stable a judge's verdicts are: two judges (two prompt versions, two models, a re-run with sampling) over
the same ideas, aligned by idea, per dimension, overall and per group (a run: one system's data setting).

A verdict is score >= cut. Flips are counted by the novelty audit's own metric (service.metrics.novelty.
flip_count), so `metrics novelty --task audit` and this audit give one number on the same verdicts. Invalid
answers (the judge's own, with their reasons in its cache) and missing scores are counted per side and never
compared."""

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import kendalltau, spearmanr
from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.errors import DomainError
from indexing.models import Idea, JudgeAnswer, JudgeScore, Run
from service.llm_judge import prompts
from service.llm_judge.cache import revisions, text_hash
from service.llm_judge.prompts import DIMENSIONS
from service.metrics.novelty import flip_count, paired_bootstrap


class AuditError(DomainError, ValueError):
    """The audit cannot be made as asked (an unknown judge: 404; nothing in common: 422)."""


def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _block(keys: Sequence[str], a: dict[str, float | None], b: dict[str, float | None], *, invalid: dict,
           cut: float, n_boot: int, seed: int) -> dict[str, Any]:
    verdict_a = {k: None if (x := a.get(k)) is None else x >= cut for k in keys}
    verdict_b = {k: None if (x := b.get(k)) is None else x >= cut for k in keys}
    flipped = flip_count(verdict_a, verdict_b, keys=keys)
    xs = np.array([a[k] for k in flipped.compared], dtype=float)
    ys = np.array([b[k] for k in flipped.compared], dtype=float)
    out: dict[str, Any] = {
        "n": len(keys), "n_compared": len(flipped.compared), "flips": len(flipped.flips), "flip_rate": flipped.rate,
        "flip_rate_ci95": None, "spearman": None, "kendall": None,
        "mean_a": float(xs.mean()) if xs.size else None, "mean_b": float(ys.mean()) if ys.size else None,
        "mean_shift": float((ys - xs).mean()) if xs.size else None, "mean_shift_ci95": None,
        "positive_a": int(sum(bool(verdict_a[k]) for k in flipped.compared)),
        "positive_b": int(sum(bool(verdict_b[k]) for k in flipped.compared)),
        "invalid": {side: sum(k in invalid[side] for k in keys) for side in ("a", "b")},
        "missing": {side: sum(scores.get(k) is None and k not in invalid[side] for k in keys)
                    for side, scores in (("a", a), ("b", b))},
        "only_a": len(flipped.only_before), "only_b": len(flipped.only_after),
    }
    if xs.size:
        indicator = np.array([k in set(flipped.flips) for k in flipped.compared], dtype=float)
        # the share of flips as a mean difference from zero: the same seeded percentile bootstrap as the shift
        out["flip_rate_ci95"] = list(paired_bootstrap(np.zeros_like(indicator), indicator, n_boot=n_boot, seed=seed))
        out["mean_shift_ci95"] = list(paired_bootstrap(xs, ys, n_boot=n_boot, seed=seed))
    if xs.size >= 3 and np.ptp(xs) > 0 and np.ptp(ys) > 0:
        out["spearman"] = _finite(spearmanr(xs, ys).statistic)
        out["kendall"] = _finite(kendalltau(xs, ys).statistic)
    return out


def pairwise_swap(session: Session, *, revision: str, texts: dict[str, str]) -> dict[str, Any] | None:
    """The order-swap flips of a judge's pairwise novelty answers over the ideas in scope (key -> text): the pairs it
    answered in both orders, by the same flip metric; None when it answered none."""
    answered = {a.text_hash: a.label for a in session.scalars(select(JudgeAnswer).where(
        JudgeAnswer.revision == revision, JudgeAnswer.task == "pair"))}
    if not answered:
        return None
    keys = sorted(texts)
    ab: dict[str, str | None] = {}
    ba: dict[str, str | None] = {}
    for i, x in enumerate(keys):
        for y in keys[i + 1:]:
            first, second = text_hash(texts[x], texts[y]), text_hash(texts[y], texts[x])
            if first in answered and second in answered:
                pair = f"{x}|{y}"
                ab[pair] = {"A": x, "B": y}.get(answered[first] or "")
                ba[pair] = {"A": y, "B": x}.get(answered[second] or "")
    swap = flip_count(ab, ba, keys=list(ab))
    return {"pairs": len(ab), "swap_compared": len(swap.compared), "swap_flips": len(swap.flips),
            "swap_flip_rate": swap.rate, "invalid": sum(ab[k] is None or ba[k] is None for k in ab)}


def audit(session: Session, *, judges: Sequence[str], runs: Sequence[int] | None = None, cut: float,
          n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    """The audit of judge B against judge A over the ideas of `runs` (every idea either scored when None)."""
    if len(judges) != 2 or judges[0] == judges[1]:
        raise AuditError("give two different judges: --judge A --judge B")
    a_name, b_name = judges
    known = set(session.scalars(select(JudgeScore.judge).distinct()))
    for name in judges:
        if name not in known:
            raise AuditError(f"no scores by judge {name!r}; known: {', '.join(sorted(known)) or 'none'}", status=404)
    query = (select(Idea.pk, Idea.idea_id, Idea.problem, Idea.method, Idea.text, Run.system, Run.label)
             .join(Run, Run.id == Idea.run_id))
    if runs:
        query = query.where(Idea.run_id.in_(list(runs)))
    else:
        query = query.where(Idea.pk.in_(select(JudgeScore.idea_pk).where(JudgeScore.judge.in_(list(judges)))))
    ideas = session.execute(query.order_by(Idea.pk)).all()
    if not ideas:
        raise AuditError("no idea in scope")
    key_of = {row.pk: f"{row.system}/{row.label}/{row.idea_id}" for row in ideas}
    group_of = {key_of[row.pk]: f"{row.system}/{row.label}" for row in ideas}
    texts = {key_of[row.pk]: prompts.idea_block(row.problem, row.method, row.text) for row in ideas}
    hashes = {k: text_hash(t) for k, t in texts.items()}
    stored = {(s.judge, key_of[s.idea_pk]): s for s in session.scalars(
        select(JudgeScore).where(JudgeScore.judge.in_(list(judges)), JudgeScore.idea_pk.in_(list(key_of))))}
    revs = revisions(session, judges)
    keys = list(key_of.values())
    dimensions: dict[str, Any] = {}
    for dim in DIMENSIONS:
        scores: dict[str, dict[str, float | None]] = {}
        invalid: dict[str, set[str]] = {}
        for side, name in (("a", a_name), ("b", b_name)):
            scores[side] = {k: getattr(stored[(name, k)], dim) if (name, k) in stored else None for k in keys}
            invalid[side] = set()
            if name in revs:  # a judge made here: its invalid answers are in its cache, with their reasons
                bad = set(session.scalars(select(JudgeAnswer.text_hash).where(
                    JudgeAnswer.revision == revs[name]["revision"], JudgeAnswer.task == "rate",
                    JudgeAnswer.question == dim, JudgeAnswer.source == "invalid")))
                invalid[side] = {k for k in keys if hashes[k] in bad and scores[side][k] is None}
        if all(v is None for v in scores["a"].values()) and all(v is None for v in scores["b"].values()):
            continue
        block = _block(keys, scores["a"], scores["b"], invalid=invalid, cut=cut, n_boot=n_boot, seed=seed)
        block["groups"] = {g: _block([k for k in keys if group_of[k] == g], scores["a"], scores["b"],
                                     invalid=invalid, cut=cut, n_boot=n_boot, seed=seed)
                           for g in sorted(set(group_of.values()))}
        dimensions[dim] = block
    pairwise = {side: pairwise_swap(session, revision=revs[name]["revision"], texts=texts) if name in revs else None
                for side, name in (("a", a_name), ("b", b_name))}
    return {"judges": {"a": a_name, "b": b_name}, "pairwise": pairwise,
            "revisions": {side: revs.get(name, {"name": name, "revision": None, "prompt": None,
                                                "note": "imported scores: no revision recorded here"})
                          for side, name in (("a", a_name), ("b", b_name))},
            "cut": cut, "rule": f"a verdict is score >= {cut:g}; a flip is a verdict that differs between the two "
                                "judges on the same idea, over the ideas both scored validly (n_compared)",
            "ideas": len(keys), "n_boot": n_boot, "seed": seed, "dimensions": dimensions,
            "counting": {"invalid": "the judge answered but its answer could not be read (kept in its cache with the "
                                    "reason): not compared, never filled",
                         "missing": "no score for the idea on this dimension (not judged, or imported without it)",
                         "flip_rate_ci95": "95% percentile interval of a seeded bootstrap over the compared ideas",
                         "mean_shift": "mean of b - a over the compared ideas, with its paired bootstrap interval",
                         "pairwise": "per judge, its pairwise novelty answers over pairs of these ideas asked in "
                                     "both orders: the order-swap flips (a tie), by the same flip metric",
                         "spearman/kendall": "rank agreement of the raw scores over the compared ideas (None when "
                                             "fewer than 3 or constant)"}}
