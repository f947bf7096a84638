"""Per-kind retrieval and decision figures for labelled ideas, with bootstrap intervals (pure functions).

Each method (hybrid, dense-only, BM25-only) gives, per idea, a ranked candidate list (positions, best first, cut
to top-k) and per candidate whether it is a `realised` and a `direction` match. Per kind of idea:
recall@1 / recall@k of the source, source matched (realised; direction), any match (realised; direction).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from indexing.calibration import evaluate_retrieval
from indexing.embedders import Embedder
from indexing.matcher.corpus import corpus_of, hybrid_of, view_of
from indexing.matcher.decide import Decision, decide, embed, verify_decisions
from indexing.matcher.labelled import LabelledIdea
from indexing.matcher.ranges import check_all
from indexing.matcher.verifier.step import VerifierStep
from indexing.versions import LoadedIndex

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
        out[kind] = {m: interval([x for x in (v[m] for v in vals) if x is not None], resamples=resamples)
                     for m in METRICS if any(v[m] is not None for v in vals)}
    return out


# --- `hindsight evaluate` on the current index (the CLI prints these reports) ---

METHODS = ("hybrid", "dense", "bm25")


def evaluate_sources(ideas: Sequence[LabelledIdea], *, loaded: LoadedIndex, embedder: Embedder, top_k: int,
                     batch_size: int = 32, progress=None) -> dict:
    """Dense retrieval of named sources: recall@k, match and false-match rates at the version's theta."""
    m = loaded.manifest
    indexed = {p["paper_id"] for p in loaded.papers.values()}
    not_indexed = [i for i in ideas if i.papers and not any(p in indexed for p in i.papers)]
    usable = [i for i in ideas if not i.papers or any(p in indexed for p in i.papers)]
    if progress:
        progress("ideas", 0, len(usable))
    vecs = embedder.encode([i.facets(embedder).whole for i in usable], batch_size=batch_size,
                           progress=(lambda n: progress("ideas", n, len(usable))) if progress else None)
    hits = [[(p["paper_id"], s) for p, s in row] for row in loaded.search(vecs, top_k)] if usable else []
    sources = [next((p for p in i.papers if p in indexed), None) for i in usable]
    return {"index_version": loaded.version, "model": m["model"], "revision": m["revision"], "theta": m["theta"],
            "top_k": top_k, "ideas_in_file": len(ideas), "source_not_indexed": len(not_indexed),
            "source_not_indexed_examples": [{"id": i.id, "source": i.papers[0]} for i in not_indexed[:5]],
            **evaluate_retrieval(sources, hits, m["theta"], ks=sorted({1, 5, min(20, top_k), top_k}))}


def with_swaps(ideas: Sequence[LabelledIdea]) -> list[LabelledIdea]:
    """The ideas plus one method swap per realised idea with facets: its problem with the method of the next such
    idea of the same venue that has another source (kind method_swap; its source is the problem's paper, which it
    must not realise, and which should stay a direction match)."""
    realised = [i for i in ideas if i.kind in ("paraphrase", "loose") and i.problem and i.method and i.source]
    by_venue: dict[str | None, list[LabelledIdea]] = {}
    for i in realised:
        by_venue.setdefault(i.venue, []).append(i)
    swaps = []
    for group in by_venue.values():
        for n, a in enumerate(group):
            b = next((g for g in group[n + 1:] + group[:n] if g.source != a.source), None)
            if b is not None:
                swaps.append(LabelledIdea(id=f"swap:{a.id}+{b.id}", line=a.line, problem=a.problem, method=b.method,
                                          papers=[str(a.source)], kind="method_swap", venue=a.venue, style=a.style,
                                          key=f"swap:{a.id}+{b.id}"))
    return [*ideas, *swaps]


def field_of(idea: LabelledIdea) -> str:
    """The idea's fold when it names one, else its venue family (aistats2023 -> aistats): the unit of
    leave-one-field-out."""
    return idea.fold or (idea.venue or "unknown").rstrip("0123456789") or "unknown"


def evaluate_kinds(ideas: Sequence[LabelledIdea], *, loaded: LoadedIndex, embedder: Embedder, top_k: int,
                   resamples: int, verifier: VerifierStep | None = None,
                   progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Per kind of labelled idea: the hybrid matcher against dense-only (the version's theta) and BM25-only (the
    matcher's fitted BM25 threshold), and with a verifier the hybrid matcher verified (`verified`, also per field
    and per style); LookupError when no idea's source is in the version."""
    matcher = hybrid_of(loaded)
    corpus = corpus_of(loaded)
    position = {r["paper_id"]: i for i, r in enumerate(corpus.rows)}
    kept = [i for i in ideas if not i.source or i.source in position]
    not_indexed = [{"line": i.line, "id": i.id, "source": i.source} for i in ideas if i not in kept]
    if not kept:
        raise LookupError(f"no idea whose source is in index {loaded.version} ({len(not_indexed)} name a source "
                          "outside it: widen the window or ingest those papers)")
    facets = [i.facets(embedder) for i in kept]
    k = max(20, top_k)
    vectors = embed(embedder, facets, "hybrid")  # once: the hybrid and dense-only rows share them
    hybrid = decide(facets, loaded=loaded, embedder=embedder, matcher="hybrid", top_k=k, vectors=vectors)
    dense = decide(facets, loaded=loaded, embedder=embedder, matcher="dense", top_k=k, vectors=vectors)
    verified: list[Decision] = []
    if verifier is not None:  # the verifier step over copies of the hybrid decisions, not a second decide
        view, ranges = view_of(loaded, None, "hybrid"), check_all(embedder, facets)
        for f, h, r in zip(facets, hybrid, ranges):  # one idea at a time: a progress bar; the cache keeps each
            verified.append(replace(h))
            verify_decisions([f], verified[-1:], view=view, step=verifier, ranges=[r])
            if progress:
                progress("verify", 1, len(facets))
    theta = loaded.manifest["theta"]
    bm25_t = float(matcher.entry.get("baselines", {}).get("bm25_whole_threshold", 1.0))
    outcomes: dict[str, list[Outcome]] = {m: [] for m in (*METHODS, *(["verified"] if verified else []))}
    by_group: dict[str, dict[str, list[Outcome]]] = {"field": {}, "style": {}}
    for idea, f, h, d in zip(kept, facets, hybrid, dense):
        kind, src = idea.kind or "unlabelled", position[idea.source] if idea.source else None
        outcomes["hybrid"].append(Outcome(kind, src, h.positions, [bool(x) for x in h.realised],
                                          [bool(x) for x in h.direction] if h.direction is not None else None))
        outcomes["dense"].append(Outcome(kind, src, d.positions, [bool(x) for x in d.realised], None))
        scores = corpus.lexical.normalised(corpus.lexical.query(f.lexical_texts()["whole"]))
        top = [int(p) for p in np.argsort(-scores, kind="stable")[:k] if scores[p] > 0]
        outcomes["bm25"].append(Outcome(kind, src, top, [bool(scores[p] >= bm25_t) for p in top], None))
        if verified:
            v = verified[len(outcomes["verified"])]
            o = Outcome(kind, src, v.positions, [bool(x) for x in v.realised],
                        [bool(x) for x in v.direction] if v.direction is not None else None)
            outcomes["verified"].append(o)
            by_group["field"].setdefault(field_of(idea), []).append(o)
            by_group["style"].setdefault(idea.style or "short", []).append(o)
    return {"index_version": loaded.version, "model": loaded.manifest["model"],
            "revision": loaded.manifest["revision"], "matcher_version": matcher.version,
            "thresholds": {"hybrid": matcher.thresholds(), "dense": {"theta": theta}, "bm25": {"bm25_whole": bm25_t}},
            "top_k": k, "ideas_in_file": len(ideas), "ideas_scored": len(kept),
            "source_not_indexed": len(not_indexed), "source_not_indexed_examples": not_indexed[:5],
            "by_kind": {m: summarise(o, resamples=resamples) for m, o in outcomes.items()},
            **({"verifier": verifier.context(), "verified_by": {
                g: {name: summarise(o, resamples=resamples) for name, o in groups.items()}
                for g, groups in by_group.items()}} if verifier is not None else {})}
