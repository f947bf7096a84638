"""Which AI-Researcher fields should make an idea's problem and method: every mapping scored against the current
index (nothing stored) and compared with hand-judged pairs.

    PYTHONPATH=. HINDSIGHT_HOME=... python scripts/generator_mappings.py PLANS_DIR LABELS.jsonl [...] [--json OUT]

Per mapping: ideas with a realised / direction match; over the labelled ideas, the rank (in the top 20) of the
best-ranked judged same-problem paper under the hybrid matcher's order and under plain cosine (dense), hit@1/5/20 and
MRR; the direction (realised) decisions' precision and recall against same_problem (same_problem_and_approach)
over the labelled ideas; and the ceiling any decision over the top 20 has: the share of judged same-problem pairs
listed in the idea's top 20 at all, and how well p_direction orders the judged candidates (ROC AUC of same-problem
against the reviewed papers judged otherwise).
"""

import argparse
import json
import sys
from pathlib import Path

from sklearn.metrics import roc_auc_score

from indexing.settings import get_settings
from service.cli.common import current_index
from service.ideas import read_path
from service.ideas.ai_researcher import MAPPINGS
from service.scoring.answer import score_ideas
from service.scoring.store import context_of


def labels_of(paths: list[Path]) -> dict[str, dict]:
    out = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[row["idea"]] = row
    return out


def rank_stats(ranks: list[int | None]) -> dict:
    n = len(ranks)
    found = [r for r in ranks if r is not None]
    return {"ideas": n, "hit@1": sum(r <= 1 for r in found) / n if n else None,
            "hit@5": sum(r <= 5 for r in found) / n if n else None,
            "hit@20": len(found) / n if n else None,
            "mrr": sum(1 / r for r in found) / n if n else None,
            "median_rank_found": sorted(found)[len(found) // 2] if found else None}


def decisions(results, labels, flag: str, gold: str) -> dict:
    tp = fp = fn = 0
    for r in results:
        label = labels.get(r.id)
        if label is None:
            continue
        truth = set(label[gold])
        flagged = {m.paper_id for m in r.matches if getattr(m, flag)}
        tp, fp, fn = tp + len(flagged & truth), fp + len(flagged - truth), fn + len(truth - flagged)
    return {"flagged": tp + fp, "correct": tp, "gold_pairs": tp + fn,
            "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / (tp + fn) if tp + fn else None}


def ceiling(results, labels) -> dict:
    """Judged same-problem pairs listed in the top k at all, and p_direction's ROC AUC over the listed judged papers
    (same-problem against reviewed-and-judged-otherwise)."""
    pairs = listed = 0
    scores, truth = [], []
    for r in results:
        label = labels.get(r.id)
        if not label or not label["same_problem"]:
            continue
        same, reviewed = set(label["same_problem"]), set(label.get("reviewed", []))
        pairs += len(same)
        listed += sum(m.paper_id in same for m in r.matches)
        for m in r.matches:
            if m.paper_id in same or m.paper_id in reviewed:
                scores.append(m.p_direction)
                truth.append(m.paper_id in same)
    auc = roc_auc_score(truth, scores) if len(set(truth)) == 2 and None not in scores else None
    return {"same_problem_pairs": pairs, "listed_in_top_k": listed / pairs if pairs else None,
            "p_direction_auc": auc, "judged_listed": len(truth)}


def measure(plans: Path, labels: dict[str, dict], top_k: int = 20) -> list[dict]:
    settings = get_settings()
    loaded, embedder = current_index(settings)
    rows = []
    for name in MAPPINGS:
        ideas = [r.idea for r in read_path(plans, "ai-researcher", mappings={"ai-researcher": name}).ideas]
        print(f"{name}: scoring {len(ideas)} ideas", file=sys.stderr)
        hybrid = score_ideas(ideas, loaded=loaded, embedder=embedder, top_k=top_k, matcher="hybrid")
        dense = score_ideas(ideas, loaded=loaded, embedder=embedder, top_k=top_k, matcher="dense")
        ranks: dict[str, list[int | None]] = {"hybrid": [], "dense": []}
        for kind, results in (("hybrid", hybrid), ("dense", dense)):
            for r in results:
                same = set(labels.get(r.id, {}).get("same_problem", []))
                if same:
                    ranks[kind].append(next((i for i, m in enumerate(r.matches, 1) if m.paper_id in same), None))
        rows.append({
            "mapping": name, "ideas": len(ideas), "labelled": sum(r.id in labels for r in hybrid),
            "realised_ideas": sum(r.matched for r in hybrid),
            "direction_ideas": sum(bool(r.n_direction_matches) for r in hybrid),
            "rank_hybrid": rank_stats(ranks["hybrid"]), "rank_dense": rank_stats(ranks["dense"]),
            "direction_vs_same_problem": decisions(hybrid, labels, "direction", "same_problem"),
            "realised_vs_same_problem_and_approach": decisions(hybrid, labels, "realised",
                                                               "same_problem_and_approach"),
            "ceiling": ceiling(hybrid, labels),
            "context": context_of(loaded, top_k, matcher="hybrid").model_dump(include={
                "model", "index_version", "matcher", "matcher_version", "thresholds", "cutoff", "window"}),
        })
    return rows


def table(rows: list[dict]) -> str:
    def f(x):
        return "–" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)
    head = ("| mapping | realised ideas | direction ideas | hybrid hit@1 / @5 / @20, MRR | dense hit@1 / @5 / @20, MRR "
            "| direction P / R | realised P / R | pairs in top 20 | p_direction AUC |\n"
            "|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        h, d = r["rank_hybrid"], r["rank_dense"]
        dv, rv = r["direction_vs_same_problem"], r["realised_vs_same_problem_and_approach"]
        lines.append(f"| {r['mapping']} | {r['realised_ideas']}/{r['ideas']} | {r['direction_ideas']}/{r['ideas']} "
                     f"| {f(h['hit@1'])} / {f(h['hit@5'])} / {f(h['hit@20'])}, {f(h['mrr'])} "
                     f"| {f(d['hit@1'])} / {f(d['hit@5'])} / {f(d['hit@20'])}, {f(d['mrr'])} "
                     f"| {f(dv['precision'])} / {f(dv['recall'])} ({dv['correct']}/{dv['flagged']}, "
                     f"{dv['gold_pairs']} gold) | {f(rv['precision'])} / {f(rv['recall'])} "
                     f"({rv['correct']}/{rv['flagged']}, {rv['gold_pairs']} gold) "
                     f"| {f(r['ceiling']['listed_in_top_k'])} | {f(r['ceiling']['p_direction_auc'])} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plans", type=Path)
    parser.add_argument("labels", type=Path, nargs="*")
    parser.add_argument("--json", type=Path, dest="json_out")
    args = parser.parse_args()
    labels = labels_of(args.labels)
    rows = measure(args.plans, labels)
    n_same = sum(bool(v["same_problem"]) for v in labels.values())
    print(f"{len(labels)} labelled ideas, {n_same} with a judged same-problem paper; "
          f"{sum(len(v['same_problem']) for v in labels.values())} same-problem pairs, "
          f"{sum(len(v['same_problem_and_approach']) for v in labels.values())} same-problem-and-approach pairs")
    print(table(rows))
    if args.json_out:
        args.json_out.write_text(json.dumps({"labels": len(labels), "with_same_problem": n_same, "rows": rows},
                                            indent=2))


if __name__ == "__main__":
    main()
