"""Decisions on hand-judged (idea, paper) pairs of real generator output: which papers a reviewer found to share an
idea's problem (`same_problem`) or its problem and approach (`same_problem_and_approach`), against what the matcher
decides for them. The AI-Researcher reader here is the evaluation's own (problem = Problem Statement, method =
Proposed Method, objects and lists flattened to text); the project's importer lives with the other importers."""

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexing.embedders import Embedder
from indexing.matcher.decide import decide_hybrid, embed
from indexing.matcher.facets import IdeaFacets, facets_of
from indexing.matcher.model import HybridMatcher
from indexing.matcher.ranges import check_all


def flatten(value: object) -> str:
    """Objects and lists flattened to text, keys kept as labels."""
    if isinstance(value, dict):
        return "\n".join(f"{k}: {flatten(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "\n".join(flatten(v) for v in value)
    return "" if value is None else str(value)


def ai_researcher_idea(path: Path, embedder: Embedder) -> IdeaFacets:
    d = json.loads(path.read_text())
    plan, raw = d.get("full_experiment_plan") or {}, d.get("raw_idea") or {}
    return facets_of(embedder, problem=flatten(plan.get("Problem Statement") or raw.get("Problem")),
                     method=flatten(plan.get("Proposed Method") or raw.get("Proposed Method")))


def read_judged(paths: Sequence[Path]) -> list[dict]:
    """Judged ideas ({idea: "<topic>/<file stem>", same_problem, same_problem_and_approach}); a later file's verdict
    on an idea replaces an earlier one's."""
    out: dict[str, dict] = {}
    for path in paths:
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            if line.strip():
                rec = json.loads(line)
                if not isinstance(rec, dict) or not isinstance(rec.get("idea"), str):
                    raise ValueError(f"{path}:{n}: field 'idea': each record names its idea as <topic>/<file stem>")
                out[rec["idea"]] = rec
    return list(out.values())


def evaluate_judged(judged: Sequence[dict], *, plans: Path, corpus, paper_ids: Sequence[str],
                    matcher: HybridMatcher, embedder: Embedder, top_k: int = 20) -> dict:
    """Direction on same-problem pairs, realised on same-problem-and-approach pairs, and the share of ideas with no
    such paper that realise anything. corpus: an ArrayCorpus-like view (positions = paper_ids order)."""
    position = {p: i for i, p in enumerate(paper_ids)}
    ideas = [ai_researcher_idea(plans / f"{j['idea']}.json", embedder) for j in judged]
    decisions = decide_hybrid(ideas, corpus=corpus, matcher=matcher, vectors=embed(embedder, ideas, "hybrid"),
                              top_k=top_k, ranges=check_all(embedder, ideas))
    sp, spa, none_realising, ranks = [], [], [], []
    for j, d in zip(judged, decisions):
        at = {paper_ids[p]: k for k, p in enumerate(d.positions)}
        for pid in j.get("same_problem", []) + j.get("same_problem_and_approach", []):
            k = at.get(pid)
            sp.append(bool(k is not None and d.direction is not None and d.direction[k]))
            ranks.append(k + 1 if k is not None else None)
        for pid in j.get("same_problem_and_approach", []):
            k = at.get(pid)
            spa.append(bool(k is not None and d.realised[k]))
        if not j.get("same_problem_and_approach"):
            none_realising.append(bool(np.any(d.realised)))
    unknown = sorted({p for j in judged for p in j.get("same_problem", []) + j.get("same_problem_and_approach", [])
                      if p not in position})
    return {"ideas": len(judged), "same_problem_pairs": len(sp),
            "same_problem_direction": float(np.mean(sp)) if sp else None,
            "same_problem_and_approach_pairs": len(spa),
            "same_problem_and_approach_realised": float(np.mean(spa)) if spa else None,
            "ideas_without_such_paper": len(none_realising),
            "ideas_without_such_paper_realising_anything": float(np.mean(none_realising)) if none_realising else None,
            "judged_pair_in_top3": float(np.mean([r is not None and r <= 3 for r in ranks])) if ranks else None,
            "unknown_paper_ids": unknown}
