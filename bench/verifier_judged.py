"""The local verifier on real generator output: AI-Researcher ideas against COLING 2025, read pair by pair and
compared with the hand-judged pairs of data/labelled/ai_researcher_coling2025_air*.jsonl.

    .venv/bin/python bench/verifier_judged.py [--ideas 24] [--top 5] [--json OUT]

A fresh HINDSIGHT_HOME gets COLING 2025 (848 papers) and an index built at the ideas' cutoff (2024-05-31); the ideas
are scored with the hybrid matcher (the embedding-only baseline) and each one's top K candidates are read by the
local verifier (the packaged model, or HINDSIGHT_VERIFIER_MODEL_PATH) with the prompts of this tree. Half the ideas
have a judged same-problem paper, half none, round-robin over the six topics. Reported: seconds and tokens per pair
and the projection to 213 ideas (goal <= 30 minutes), and the time against scoring the same ideas with the embedding
matcher alone (the baseline, measured in the same run); over the judged pairs read (a candidate judged same-problem,
or reviewed and judged otherwise), how well the verifier's P(same problem) orders them (ROC AUC) beside the
embedding matcher's p_direction on the same pairs, P(same approach) against the same-problem-and-approach pairs,
and per idea whether the verifier's or the embedding's first candidate is a judged same-problem paper. No rule is
applied: these are the probabilities a fitted rule would read.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from sklearn.metrics import roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import corpus  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "generators"
PLANS = SHARED / "ai-researcher" / "experiment_plans"
CORPUS = corpus.COLING
LABELS = sorted((ROOT / "data" / "labelled").glob("ai_researcher_coling2025_air*.jsonl"))
CUTOFF = date(2024, 5, 31)
ALL_IDEAS, GOAL_MINUTES = 213, 30.0


def pick(ids: list[str], judged: dict[str, dict], n: int) -> list[str]:
    """n idea ids: half with a judged same-problem paper, half without, round-robin over topics."""
    def round_robin(pool: list[str], k: int) -> list[str]:
        topics: dict[str, list[str]] = {}
        for i in pool:
            topics.setdefault(i.split("/")[0], []).append(i)
        out: list[str] = []
        while len(out) < k and any(topics.values()):
            for names in topics.values():
                if names and len(out) < k:
                    out.append(names.pop(0))
        return out
    positive = [i for i in ids if judged.get(i, {}).get("same_problem")]
    negative = [i for i in ids if i in judged and not judged[i]["same_problem"]]
    return round_robin(positive, (n + 1) // 2) + round_robin(negative, n // 2)


def auc(truth: list[bool], scores: list[float]) -> float | None:
    return float(roc_auc_score(truth, scores)) if len(set(truth)) == 2 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ideas", type=int, default=24)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--json", type=Path, dest="json_out")
    args = parser.parse_args()
    if not PLANS.is_dir() or not CORPUS.exists():
        raise SystemExit(f"{PLANS} or {CORPUS} is missing (the shared generator outputs)")

    from indexing.matcher.decide import verifier_text
    from indexing.matcher.facets import facets_of
    from indexing.matcher.verifier import prompts
    from indexing.matcher.verifier.local import LocalVerifier
    from indexing.matcher.verifier.step import VerifierStep
    from indexing.settings import Settings
    from service.ideas import read_path
    from service.scoring.answer import score_ideas

    sys.path.insert(0, str(ROOT))
    from scripts.generator_mappings import labels_of

    judged = labels_of(LABELS)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(os.environ.get("HINDSIGHT_HOME") or Path(tmp) / "home")
        settings = Settings(home=home)
        loaded, embedder = corpus.coling_index(settings, CUTOFF)
        read = read_path(PLANS, "ai-researcher").ideas
        by_id = {r.idea.id: r.idea for r in read}
        chosen = pick(sorted(by_id), judged, args.ideas)
        ideas = [by_id[i] for i in chosen]
        started = time.perf_counter()
        score_ideas(ideas, loaded=loaded, embedder=embedder, top_k=args.top, matcher="hybrid")  # the baseline
        score_s = time.perf_counter() - started

        started = time.perf_counter()
        verifier = LocalVerifier.from_settings(settings)
        load_s = time.perf_counter() - started
        # the matcher's own verifier step, as `hindsight score --verifier local` runs it (no cache: every pair read)
        step = VerifierStep(verifier=verifier, cache=None, top_k=args.top)
        idea_tokens = [len(verifier._idea(verifier_text(facets_of(embedder, problem=i.problem, method=i.method,
                                                                  text=i.text)))) - len(verifier._system)
                       for i in ideas]
        started = time.perf_counter()
        verified = score_ideas(ideas, loaded=loaded, embedder=embedder, top_k=args.top, matcher="hybrid",
                               verifier=step)
        seconds = time.perf_counter() - started - score_s  # the verifier's part of the verified scoring
        rows = []
        for idea, result in zip(ideas, verified):
            label = judged.get(idea.id, {})
            for m in result.matches:
                assert m.verifier is not None  # every top-K candidate is read
                rows.append({"idea": idea.id, "paper": m.paper_id, "v_direction": m.verifier.p_direction,
                             "v_realised": m.verifier.p_realised, "p_direction": m.p_direction,
                             "p_realised": m.p_realised, "same_problem": m.paper_id in label.get("same_problem", []),
                             "same_approach": m.paper_id in label.get("same_problem_and_approach", []),
                             "judged": m.paper_id in label.get("same_problem", []) + label.get("reviewed", [])})

    pairs = len(rows)
    judged_rows = [r for r in rows if r["judged"]]
    truth = [r["same_problem"] for r in judged_rows]
    first = {"verifier": 0, "embedding": 0}
    positives = [i for i in chosen if judged[i]["same_problem"]]
    for i in positives:
        mine = [r for r in rows if r["idea"] == i]
        first["verifier"] += max(mine, key=lambda r: r["v_direction"])["same_problem"] if mine else 0
        first["embedding"] += mine[0]["same_problem"] if mine else 0
    report = {
        "prompt_version": prompts.PROMPT_VERSION, "revision": verifier.revision, "ideas": len(ideas),
        "with_same_problem_paper": len(positives), "top_k": args.top, "pairs": pairs, "load_s": round(load_s, 1),
        "seconds_per_pair": round(seconds / pairs, 2),
        "verify_over_embedding_only": round(seconds / score_s, 1),  # the baseline: scoring the same ideas
        "tokens_per_pair": round(verifier.tokens_evaluated / pairs),
        "idea_tokens_median": sorted(idea_tokens)[len(idea_tokens) // 2],
        "projected_minutes_213": round(seconds / len(ideas) * ALL_IDEAS * args.top / max(1, pairs / len(ideas))
                                       / 60, 1),
        "judged_pairs": len(judged_rows), "same_problem_pairs": sum(truth),
        "auc_direction": {"verifier": auc(truth, [r["v_direction"] for r in judged_rows]),
                          "embedding": auc(truth, [r["p_direction"] for r in judged_rows])},
        "auc_realised_vs_same_approach": {
            "verifier": auc([r["same_approach"] for r in judged_rows], [r["v_realised"] for r in judged_rows]),
            "embedding": auc([r["same_approach"] for r in judged_rows], [r["p_realised"] for r in judged_rows])},
        "first_is_same_problem": {k: f"{v}/{len(positives)}" for k, v in first.items()},
        "v_direction_range": [round(min(r["v_direction"] for r in rows), 3),
                              round(max(r["v_direction"] for r in rows), 3)],
    }
    print(json.dumps(report, indent=2))
    print(f"goal: 213 ideas at K={args.top} in <= {GOAL_MINUTES:.0f} min: "
          f"{'met' if report['projected_minutes_213'] <= GOAL_MINUTES else 'missed'}")
    if args.json_out:
        args.json_out.write_text(json.dumps({"report": report, "pairs": rows}, indent=1))


if __name__ == "__main__":
    main()
