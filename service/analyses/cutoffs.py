"""Cutoff sensitivity: the selected runs' ideas re-scored at several cutoffs of one index, per system.

Each cutoff is a window [cutoff, until] of the loaded version (its papers and its own c_hat), so a user sees
whether a system comparison survives a shift of the split. The ideas are embedded once; nothing is stored.
"""

from itertools import combinations
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.embedders import Embedder
from indexing.matcher.serving import matcher_of
from indexing.models import Idea, Run
from indexing.versions import LoadedIndex
from indexing.windows import WindowError
from service.analyses.selection import AnalysisError, NotFound, Selection, check_selection, number
from service.analyses.stats import bootstrap_mean_ci, compare_samples
from service.scoring.answer import embed_ideas, score_ideas
from service.schemas import IdeaIn
from service.scoring.store import context_of
from service.systems import declared_cutoffs

MAX_CUTOFFS = 12
MAX_IDEAS = 4096


def parse_cutoffs(text: str | list[str] | None, loaded: LoadedIndex) -> list[str]:
    """Comma-separated (or listed) dates, each checked against the built window; sorted, unique."""
    items = text if isinstance(text, list) else (text or "").split(",")
    items = [c.strip() for part in items for c in str(part).split(",") if c.strip()]
    start, end = loaded.built_window
    if not items:
        raise WindowError("cutoffs", f"give at least one cutoff date (YYYY-MM-DD, comma-separated) in {start}..{end}",
                          loaded.built_window, status=422)
    if len(items) > MAX_CUTOFFS:
        raise WindowError("cutoffs", f"{len(items)} cutoffs; at most {MAX_CUTOFFS}, each in {start}..{end}",
                          loaded.built_window, status=422)
    return sorted(set(items))


def _ideas(session: Session, selection: Selection) -> list[Any]:
    check_selection(session, selection)
    query = (select(Idea.pk, Idea.idea_id, Idea.problem, Idea.method, Idea.text, Run.id, Run.system, Run.label)
             .join(Run, Run.id == Idea.run_id).order_by(Idea.pk))
    if selection.runs:
        query = query.where(Run.id.in_(selection.runs))
    if selection.systems:
        query = query.where(Run.system.in_(selection.systems))
    return list(session.execute(query).all())


def cutoff_sensitivity(session: Session, *, loaded: LoadedIndex, embedder: Embedder, selection: Selection,
                       cutoffs: str | list[str], until: str | None = None, top_k: int = 20,
                       n_resamples: int = 2000, seed: int = 0) -> dict:
    """Per cutoff: the window, its papers, and per group n, mean score [95% CI], match rate, leak risk; pairwise
    comparisons; and per pair whether the leader stays the same at every cutoff."""
    days = parse_cutoffs(cutoffs, loaded)
    windows = [loaded.resolve_window(c, until, cutoff_field="cutoffs") for c in days]
    rows = _ideas(session, selection)
    if not rows:
        raise NotFound("runs", "no stored ideas in the selection")
    if len(rows) > MAX_IDEAS:
        raise AnalysisError("runs", f"{len(rows)} ideas selected; the sensitivity analysis re-scores at most "
                                    f"{MAX_IDEAS}: select fewer runs")
    ideas = [IdeaIn.model_construct(id=r.idea_id, problem=r.problem, method=r.method, text=r.text) for r in rows]
    matcher = matcher_of(loaded)
    # embedded once for every cutoff: whole texts for the dense rule, every facet for the hybrid one
    vectors = embed_ideas(embedder, ideas, matcher)
    groups = [r.system if selection.group_by != "run" else f"{r.system}/{r.label}" for r in rows]
    systems_of = {g: r.system for g, r in zip(groups, rows)}
    declared = declared_cutoffs(session)
    names = sorted(set(groups))
    out = []
    for window in windows:
        results = score_ideas(ideas, loaded=loaded, embedder=embedder, top_k=top_k, window=window, matcher=matcher,
                              vectors=vectors)
        scores = {g: np.array([res.score for res, gg in zip(results, groups) if gg == g]) for g in names}
        matched = {g: np.array([res.matched for res, gg in zip(results, groups) if gg == g]) for g in names}
        entry: dict[str, Any] = {
            "cutoff": window.start.isoformat(), "window": window.as_dict(), "papers": window.papers,
            "impact": loaded.window_impacts(window).stats, "groups": [], "comparisons": [], "warnings": []}
        for g in names:
            system = systems_of[g]
            leak = system in declared and window.start < declared[system]
            entry["groups"].append({
                "group": g, "system": system, "ideas": int(scores[g].size), "mean_score": number(scores[g].mean()),
                "ci": bootstrap_mean_ci(scores[g], confidence=0.95, n_resamples=n_resamples, seed=seed,
                                        method="BCa"),
                "matched": int(matched[g].sum()), "match_rate": number(matched[g].mean()),
                "knowledge_cutoff": declared[system].isoformat() if system in declared else None,
                "leak_risk": bool(leak)})
            if leak:
                entry["warnings"].append({"code": "leak_risk", "message": (
                    f"{system}: cutoff {window.start} is earlier than its declared knowledge cutoff "
                    f"{declared[system]}; its matches here may be papers it knew")})
        for a, b in combinations(names, 2):
            entry["comparisons"].append({"a": a, "b": b, **compare_samples(scores[a], scores[b])})
        out.append(entry)
    return {
        "selection": selection.as_dict(), "index_version": loaded.version, "model": loaded.manifest["model"],
        "theta": loaded.manifest["theta"], "matcher": matcher, "top_k": top_k,
        **context_of(loaded, top_k, matcher=matcher).model_dump(include={"matcher_version", "thresholds"}),
        "built_window": loaded.manifest["window"],
        "until": windows[0].end.isoformat(), "ideas": len(rows),
        "citation_normalisation": loaded.table.normalisation,
        "stored": False, "note": "ideas re-scored in memory at each cutoff; stored scores are not changed",
        "cutoffs": out, "stability": stability(out, names),
    }


def stability(entries: list[dict], names: list[str]) -> list[dict]:
    """Per pair: which group leads on mean score at each cutoff, and whether that survives every cutoff."""
    pairs = []
    for a, b in combinations(names, 2):
        leaders = []
        for e in entries:
            cmp = next(c for c in e["comparisons"] if c["a"] == a and c["b"] == b)
            ma, mb = cmp["mean_a"], cmp["mean_b"]
            leaders.append(None if ma is None or mb is None else a if ma > mb else b if mb > ma else "tie")
        pairs.append({"a": a, "b": b, "leader_by_cutoff": leaders,
                      "consistent": len(set(leaders)) == 1 and leaders[0] not in (None, "tie")})
    return pairs


def cutoff_rows(answer: dict) -> list[dict]:
    """A flat table: one row per (cutoff, group)."""
    return [{"cutoff": e["cutoff"], "window_end": e["window"]["end"], "papers": e["papers"], "group": g["group"],
             "ideas": g["ideas"], "mean_score": g["mean_score"], "ci_low": (g["ci"] or [None, None])[0],
             "ci_high": (g["ci"] or [None, None])[1], "match_rate": g["match_rate"], "leak_risk": g["leak_risk"]}
            for e in answer["cutoffs"] for g in e["groups"]]
