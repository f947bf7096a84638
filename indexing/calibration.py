"""Threshold calibration: pure functions over retrieved similarities and positive pairs.

"Matched" means what scoring means by it: a paper among an idea's top-k whose cosine is >= theta. Over a set of
ideas with known positive papers, every retrieved (idea, paper) pair above theta is a true positive when the paper
is one of the idea's positives and a false positive otherwise; a positive that is not retrieved above theta (below
theta, or not in the top-k at all) is a false negative. Precision, recall and F1 follow; the picked theta is the one
reaching the target precision with the highest recall.

The null distribution is the cosines of random (idea, non-positive paper) pairs: a theta's percentile in it carries
a threshold from one model to another (`theta_at_null_percentile`).
"""

import csv
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

import numpy as np
from sqlalchemy import select

from indexing.db import session_scope
from indexing.embed_cache import embed_with_cache
from indexing.embedders import join
from indexing.models import Paper
from indexing.vectorindex.faiss_index import FaissIndex

Hits = Sequence[Sequence[tuple[str, float]]]  # per idea: (paper id, cosine), best first
MISSED = -2.0  # score given to a positive outside the top-k: below any cosine, so never "matched"


@dataclass(frozen=True)
class CurvePoint:
    theta: float
    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float
    ideas_matched: float  # share of ideas with at least one paper above theta

    def as_dict(self) -> dict:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def pair_scores(positives: Sequence[set[str]], hits: Hits) -> tuple[np.ndarray, np.ndarray]:
    """(y_true, score) over every retrieved pair, plus one MISSED-scored row per positive outside the top-k."""
    if len(positives) != len(hits):
        raise ValueError(f"{len(positives)} positive sets for {len(hits)} hit lists")
    y, s = [], []
    for pos, row in zip(positives, hits):
        seen = set()
        for pid, sim in row:
            y.append(pid in pos)
            s.append(float(sim))
            seen.add(pid)
        for _ in pos - seen:
            y.append(True)
            s.append(MISSED)
    return np.asarray(y, dtype=bool), np.asarray(s, dtype=np.float64)


def theta_grid(start: float = 0.0, stop: float = 1.0, step: float = 0.01) -> np.ndarray:
    n = int(round((stop - start) / step))
    return np.round(start + step * np.arange(n + 1), 6)


def pr_curve(positives: Sequence[set[str]], hits: Hits,
             thetas: Sequence[float] | np.ndarray | None = None) -> list[CurvePoint]:
    """Precision, recall and F1 of "matched" (cosine >= theta within the top-k) at each theta."""
    grid = theta_grid() if thetas is None else np.asarray(thetas, dtype=np.float64)
    y, s = pair_scores(positives, hits)
    pos_scores, neg_scores = np.sort(s[y]), np.sort(s[~y])
    n_pos = len(pos_scores)
    best = np.array([max((sim for _, sim in row), default=MISSED) for row in hits], dtype=np.float64)
    best.sort()
    out = []
    for t in grid:
        tp = n_pos - int(np.searchsorted(pos_scores, t, side="left"))
        fp = len(neg_scores) - int(np.searchsorted(neg_scores, t, side="left"))
        fn = n_pos - tp
        precision = tp / (tp + fp) if tp + fp else 1.0  # nothing matched: no false match (sklearn's convention)
        recall = tp / n_pos if n_pos else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        matched = (len(best) - int(np.searchsorted(best, t, side="left"))) / len(best) if len(best) else 0.0
        out.append(CurvePoint(float(t), tp, fp, fn, precision, recall, f1, matched))
    return out


def pick_theta(curve: Sequence[CurvePoint], target_precision: float) -> CurvePoint | None:
    """The point reaching the target precision with the highest recall (ties: the higher precision, then the
    lower theta); None when no theta reaches the target with any recall."""
    ok = [p for p in curve if p.precision >= target_precision and p.tp > 0]
    if not ok:
        return None
    return max(ok, key=lambda p: (p.recall, p.precision, -p.theta))


def exact_pick(positives: Sequence[set[str]], hits: Hits, target_precision: float) -> dict:
    """The same pick over every distinct cosine (sklearn's precision_recall_curve), plus average precision."""
    y, s = pair_scores(positives, hits)
    if not y.any():
        return {"theta": None, "precision": None, "recall": None, "average_precision": None}
    from sklearn.metrics import average_precision_score, precision_recall_curve  # 1.5 s at every CLI start

    precision, recall, thresholds = precision_recall_curve(y, s)
    precision, recall = precision[:-1], recall[:-1]  # the last point has no threshold
    keep = (thresholds > MISSED) & (precision >= target_precision)
    ap = float(average_precision_score(y, s))
    if not keep.any():
        return {"theta": None, "precision": None, "recall": None, "average_precision": ap}
    idx = np.flatnonzero(keep)
    i = idx[np.lexsort((-precision[idx], -recall[idx]))[0]]
    return {"theta": float(thresholds[i]), "precision": float(precision[i]), "recall": float(recall[i]),
            "average_precision": ap}


def null_cosines(idea_vectors: np.ndarray, paper_vectors: np.ndarray, positive_rows: Sequence[set[int]], *,
                 sample: int = 1_000_000, seed: int = 0, chunk: int = 512) -> np.ndarray:
    """Cosines of (idea, paper) pairs where the paper is not one of the idea's positives (row indices into
    paper_vectors); all of them when there are at most `sample`, else a uniform random sample of that size."""
    n_ideas, n_papers = len(idea_vectors), len(paper_vectors)
    total = n_ideas * n_papers - sum(len(p) for p in positive_rows)
    rng = np.random.default_rng(seed)
    keep_rate = 1.0 if total <= sample else sample / total
    parts = []
    for start in range(0, n_ideas, chunk):
        sims = idea_vectors[start:start + chunk] @ paper_vectors.T
        mask = np.ones(sims.shape, dtype=bool)
        for r, pos in enumerate(positive_rows[start:start + chunk]):
            mask[r, list(pos)] = False
        if keep_rate < 1.0:
            mask &= rng.random(sims.shape) < keep_rate
        parts.append(sims[mask])
    return np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)


def null_summary(cosines: np.ndarray, thetas: Sequence[float] = ()) -> dict:
    """Quantiles of the null cosines and each theta's percentile in them (share of null pairs below theta)."""
    cosines = np.asarray(cosines, dtype=np.float64)
    if cosines.size == 0:
        raise ValueError("no null cosines to summarise")
    qs = {"p01": 1, "p05": 5, "p25": 25, "median": 50, "p75": 75, "p95": 95, "p99": 99, "p99.9": 99.9}
    values = np.percentile(cosines, list(qs.values()))
    return {
        "n_pairs": int(cosines.size), "mean": float(cosines.mean()), "std": float(cosines.std()),
        "min": float(cosines.min()), "max": float(cosines.max()),
        "quantiles": {k: float(v) for k, v in zip(qs, values)},
        "theta_percentiles": {f"{t:g}": null_percentile(cosines, t) for t in thetas},
    }


def null_percentile(cosines: np.ndarray, theta: float) -> float:
    """Percentile (0-100) of theta in the null distribution: the share of random pairs strictly below it."""
    from scipy import stats

    return float(stats.percentileofscore(cosines, theta, kind="strict"))


def theta_at_null_percentile(cosines: np.ndarray, percentile: float) -> float:
    """The theta sitting at this percentile of another model's null: how a threshold is carried across models."""
    return float(np.percentile(np.asarray(cosines, dtype=np.float64), percentile))


def source_ranks(sources: Sequence[str | None], hits: Hits) -> list[int | None]:
    """1-based rank of each idea's source paper in its hits; None when absent (or the idea names no source)."""
    out = []
    for src, row in zip(sources, hits):
        rank = next((r for r, (pid, _) in enumerate(row, start=1) if pid == src), None) if src else None
        out.append(rank)
    return out


def evaluate_retrieval(sources: Sequence[str | None], hits: Hits, theta: float, ks: Sequence[int] = (1, 5, 20)) -> dict:
    """recall@k of named sources, the rate at which the source is matched above theta, and for ideas with no
    source the false-match rate (any paper above theta). Every idea is counted in exactly one denominator."""
    if len(sources) != len(hits):
        raise ValueError(f"{len(sources)} sources for {len(hits)} hit lists")
    ranks = source_ranks(sources, hits)
    with_src = [i for i, s in enumerate(sources) if s]
    without = [i for i, s in enumerate(sources) if not s]
    out: dict = {"theta": theta, "ideas": len(sources), "with_source": len(with_src), "without_source": len(without)}
    if with_src:
        n = len(with_src)
        ranked = {i: r for i in with_src if (r := ranks[i]) is not None}  # idea -> its source's rank, if found
        for k in ks:
            out[f"recall@{k}"] = sum(1 for r in ranked.values() if r <= k) / n
        src_matched = sum(1 for i, r in ranked.items() if hits[i][r - 1][1] >= theta)
        out["source_matched_rate"] = src_matched / n
        out["any_matched_rate"] = sum(1 for i in with_src if any(s >= theta for _, s in hits[i])) / n
        found = list(ranked.values())
        out["mrr"] = sum(1.0 / r for r in found) / n
        out["source_not_in_top_k"] = n - len(found)
        sims = [hits[i][r - 1][1] for i, r in ranked.items()]
        out["source_cosine_median"] = float(np.median(sims)) if sims else None
    if without:
        false = sum(1 for i in without if any(s >= theta for _, s in hits[i]))
        out["false_match_rate"] = false / len(without)
        out["false_matches"] = false
        tops = [hits[i][0][1] for i in without if hits[i]]
        out["no_source_top1_cosine_median"] = float(np.median(tops)) if tops else None
    return out


# --- theta from positive (idea, paper) pairs over the ingested corpus: `hindsight calibrate` (dense) ---

PAPER_TEXTS = ("title+abstract", "abstract")


def papers_in_db(db_path: Path, start: date | None = None, end: date | None = None) -> list:
    """(paper_id, title, abstract) rows of the ingested papers in database order, optionally by date."""
    with session_scope(db_path) as session:
        query = select(Paper.paper_id, Paper.title, Paper.abstract).order_by(Paper.pk)
        if start:
            query = query.where(Paper.publication_date >= start)
        if end:
            query = query.where(Paper.publication_date <= end)
        return list(session.execute(query).all())


@dataclass
class DenseCalibration:
    report: dict
    curve: list[CurvePoint]
    pick: CurvePoint | None
    null: np.ndarray | None


def calibrate_dense(ideas: Sequence, *, embedder, settings, top_k: int, target_precision: float,
                    paper_text: str = "title+abstract", start: date | None = None, end: date | None = None,
                    step: float = 0.01, null: bool = False, null_sample: int = 1_000_000,
                    thetas: Sequence[float] = (), progress=None) -> DenseCalibration:
    """The theta reaching the target precision with the highest recall over labelled ideas (indexing.matcher.
    labelled, pooled by id) against every ingested paper (in the date range); LookupError when nothing is usable."""
    if paper_text not in PAPER_TEXTS:
        raise ValueError(f"--paper-text must be {' or '.join(PAPER_TEXTS)}")
    rows = papers_in_db(settings.db_path, start, end)
    skipped_empty = 0
    if paper_text == "abstract":
        skipped_empty = sum(1 for r in rows if not (r.abstract or "").strip())
        rows = [r for r in rows if (r.abstract or "").strip()]
    if not rows:
        raise LookupError("no papers in the database (in the date range): ingest the corpus first with "
                          "`hindsight ingest`")
    row_of = {r.paper_id: i for i, r in enumerate(rows)}
    unresolved = [(i.line, p) for i in ideas for p in i.papers if p not in row_of]
    usable = [i for i in ideas if any(p in row_of for p in i.papers)]
    if not usable:
        raise LookupError(f"none of the {len(ideas)} ideas names a paper in the corpus (e.g. line "
                          f"{unresolved[0][0]}: {unresolved[0][1]!r}); check the paper ids against `hindsight "
                          "ingest`ed papers")
    texts = [r.abstract.strip() if paper_text == "abstract" else join(embedder, r.title, r.abstract) for r in rows]
    k = min(top_k, len(rows))
    paper_vecs, embedded = embed_with_cache(embedder, texts, db_path=settings.db_path,
                                            batch_size=settings.index.batch_size, progress=progress)
    if progress:
        progress("ideas", 0, len(usable))
    idea_vecs = embedder.encode([i.facets(embedder).whole for i in usable], batch_size=settings.index.batch_size,
                                progress=(lambda n: progress("ideas", n, len(usable))) if progress else None)
    index = FaissIndex.create(embedder.dim, factory="IDMap2,Flat")
    index.add(paper_vecs, np.arange(len(rows), dtype=np.int64))
    sims, ids = index.search(idea_vecs, k)
    hits = [[(rows[j].paper_id, float(s)) for s, j in zip(srow, irow) if j >= 0] for srow, irow in zip(sims, ids)]
    positives = [{p for p in i.papers if p in row_of} for i in usable]
    curve = pr_curve(positives, hits, theta_grid(0.0, 1.0, step))
    pick = pick_theta(curve, target_precision)
    report: dict = {
        "model": embedder.key, "model_id": embedder.model_id, "revision": embedder.revision,
        "current_theta": embedder.theta, "target_precision": target_precision, "top_k": k,
        "paper_text": paper_text,
        "counts": {"ideas": len(ideas), "ideas_used": len(usable), "positives": sum(map(len, positives)),
                   "unresolved_paper_ids": len(unresolved), "papers": len(rows),
                   "papers_skipped_empty_abstract": skipped_empty, "papers_embedded_now": embedded},
        "unresolved_examples": [{"line": n, "paper_id": p} for n, p in unresolved[:5]],
        "picked": pick.as_dict() if pick else None, "exact": exact_pick(positives, hits, target_precision),
        "at_thetas": [p.as_dict() for p in pr_curve(positives, hits, sorted({embedder.theta, *thetas}))],
        "curve": [p.as_dict() for p in curve],
    }
    null_cos = None
    if null:
        null_rows = [{row_of[p] for p in i.papers if p in row_of} for i in usable]
        null_cos = null_cosines(idea_vecs, paper_vecs, null_rows, sample=null_sample)
        report["null"] = null_summary(null_cos, sorted({embedder.theta, *thetas, *([pick.theta] if pick else [])}))
    return DenseCalibration(report, curve, pick, null_cos)


def theta_entry(cal: DenseCalibration, *, pairs_file: str) -> dict:
    """The thetas registry entry for a calibration's pick (which must exist)."""
    r, pick = cal.report, cal.pick
    assert pick is not None
    entry = {"theta": pick.theta, "model_id": r["model_id"], "revision": r["revision"],
             "target_precision": r["target_precision"], "precision": round(pick.precision, 4),
             "recall": round(pick.recall, 4), "f1": round(pick.f1, 4), "pairs": r["counts"]["ideas_used"],
             "top_k": r["top_k"], "paper_text": r["paper_text"], "pairs_file": pairs_file}
    if cal.null is not None:
        entry["null_percentile"] = round(null_percentile(cal.null, pick.theta), 4)
    return entry


def write_curve_csv(path: Path, curve: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(curve[0]))
        writer.writeheader()
        writer.writerows(curve)


def plot_curve(path: Path, cal: DenseCalibration, title: str) -> None:
    """Precision / recall / F1 against theta, and the null distribution beside it when there is one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve, pick, null = cal.curve, cal.pick, cal.null
    panels = 2 if null is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.2), squeeze=False)
    ax = axes[0][0]
    t = [p.theta for p in curve]
    ax.plot(t, [p.precision for p in curve], label="precision")
    ax.plot(t, [p.recall for p in curve], label="recall")
    ax.plot(t, [p.f1 for p in curve], label="F1", linestyle="--")
    if pick:
        ax.axvline(pick.theta, color="grey", linestyle=":", label=f"picked theta {pick.theta:.2f}")
    ax.set_xlabel("theta (cosine)")
    ax.set_ylim(0, 1.02)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    if null is not None:
        ax2 = axes[0][1]
        ax2.hist(null, bins=100, density=True, color="tab:grey", alpha=0.8)
        if pick:
            ax2.axvline(pick.theta, color="tab:red", linestyle=":",
                        label=f"theta {pick.theta:.2f}: percentile {null_percentile(null, pick.theta):.4f}")
            ax2.legend(fontsize=8)
        ax2.set_xlabel("cosine of random idea-paper pairs (null)")
        ax2.set_title(f"null distribution, {len(null):,} pairs", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
