"""Per-kind retrieval and decision figures for labelled ideas, with bootstrap intervals (pure functions).

Each method (hybrid, dense-only, BM25-only) gives, per idea, a ranked candidate list (positions, best first, cut
to top-k) and per candidate whether it is a `realised` and a `direction` match. Per kind of idea:
recall@1 / recall@k of the source, source matched (realised; direction), any match (realised; direction).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

METRICS = ("recall@1", "recall@20", "source_realised", "source_direction", "any_realised", "any_direction")


@dataclass
class Outcome:
    kind: str
    source: int | None
    ranked: list[int]  # positions, best first (top-k)
    realised: list[bool]
    direction: list[bool] | None  # None: the method has no direction decision

    def values(self) -> dict[str, float | None]:
        rank = self.ranked.index(self.source) + 1 if self.source is not None and self.source in self.ranked else None
        out: dict[str, float | None] = {
            "recall@1": None if self.source is None else float(rank == 1),
            "recall@20": None if self.source is None else float(rank is not None and rank <= 20),
            "source_realised": None if self.source is None else float(rank is not None and self.realised[rank - 1]),
            "any_realised": float(any(self.realised)),
            "source_direction": None, "any_direction": None,
        }
        if self.direction is not None:
            out["any_direction"] = float(any(self.direction))
            if self.source is not None:
                out["source_direction"] = float(rank is not None and self.direction[rank - 1])
        return out


def interval(values: Sequence[float], *, resamples: int = 2000, seed: int = 0) -> dict:
    """Mean with a 95% percentile bootstrap interval over ideas."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return {"value": None, "low": None, "high": None, "n": 0}
    if a.size == 1 or np.all(a == a[0]):
        return {"value": float(a.mean()), "low": float(a.mean()), "high": float(a.mean()), "n": int(a.size)}
    res = stats.bootstrap((a,), np.mean, n_resamples=resamples, method="percentile", confidence_level=0.95,
                          random_state=np.random.default_rng(seed))
    return {"value": float(a.mean()), "low": float(res.confidence_interval.low),
            "high": float(res.confidence_interval.high), "n": int(a.size)}


def summarise(outcomes: Sequence[Outcome], *, resamples: int = 2000) -> dict:
    """{kind: {metric: interval}}, kinds in first-seen order, plus 'realised ideas' (paraphrase + loose pooled)."""
    by_kind: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_kind.setdefault(o.kind, []).append(o)
    realised = [o for o in outcomes if o.kind in ("paraphrase", "loose", "realised")]
    if realised and len({o.kind for o in realised}) > 1:
        by_kind["realised (all)"] = realised
    out = {}
    for kind, group in by_kind.items():
        vals = [o.values() for o in group]
        out[kind] = {m: interval([v[m] for v in vals if v[m] is not None], resamples=resamples)
                     for m in METRICS if any(v[m] is not None for v in vals)}
    return out
