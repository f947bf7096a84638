"""Prediction-powered estimates on real generator output, against a full known truth: repeated independent draws of
a stored run's ideas, each labelled from the truth, and how often each 95% interval covers the truth.

    HINDSIGHT_HOME=... .venv/bin/python bench/labels_coverage.py --run R --truth FILE... [--n 25] [--draws 20]
        [--annotator judged] [--predictor decision] [--json OUT]

The run's ideas must be scored and the truth imported as labels first (`hindsight label import FILE --run R
--annotator judged`): every idea of the truth files is then labelled, and each draw decides which of those labels
the estimates may read (the others are outside any draw: kept, left out). The truth rates are counted here from the
truth files themselves (judged format: an idea is realised when `same_problem_and_approach` is not empty, a
direction idea when `same_problem` is not), not from the store. Per draw the earlier draws are deleted, so the 20
draws are independent. Also reported: the matcher's agreement with all the labels, checked against an independent
count over the same pairs (read from the stored matches here).
"""

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select

from indexing.db import migrate, session_scope
from indexing.models import Idea, Match, Run, Score
from indexing.settings import get_settings
from service.analyses.selection import Selection
from service.labels.draws import draw, runs_of
from service.labels.estimates import labelled_summary
from service.labels.models import Draw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.generator_mappings import labels_of  # noqa: E402

METRICS = ("realised_rate", "direction_rate")


def truth_from_kinds(session, run_ids: list[int], kinds: Path, shown: int) -> list[dict]:
    """Judged-format rows for labelled ideas of known kind (data/labelled/coling2025_ideas.jsonl): paraphrase and
    loose ideas are realised by their source paper, a hard negative's source is a direction match, a vague idea has
    neither; the idea's first `shown` stored candidates are reviewed, so a reader's "none of these" covers them."""
    out = []
    for line in kinds.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        pk = session.scalar(select(Idea.pk).where(Idea.run_id.in_(run_ids), Idea.idea_id == row["id"]))
        if pk is None:
            continue
        shown_ids = list(session.scalars(select(Match.paper_id).join(Score, Score.id == Match.score_id)
                                         .where(Score.idea_pk == pk, Match.rank <= shown).order_by(Match.rank)))
        source = row["source_paper_id"]
        out.append({"idea": row["id"], "reviewed": shown_ids + ([source] if source and source not in shown_ids else []),
                    "same_problem": [source] if row["kind"] != "vague" else [],
                    "same_problem_and_approach": [source] if row["kind"] in ("paraphrase", "loose") else []})
    return out


def independent_agreement(session, run_ids: list[int], truth: dict[str, dict], shown: int) -> dict:
    """tp/fp/fn/tn of the stored (embedding) calls per decision at pair level: every judged pair plus the first
    `shown` candidates of each judged idea, a candidate without a judgement counting as none, a judged paper outside
    the candidates as the matcher's no."""
    counts = {d: dict.fromkeys(("tp", "fp", "fn", "tn"), 0) for d in ("realised", "direction")}
    ideas = dict(session.execute(select(Idea.idea_id, Idea.pk).where(Idea.run_id.in_(run_ids))).all())
    for idea_id, row in truth.items():
        pk = ideas[idea_id]
        matches = session.execute(select(Match.rank, Match.paper_id, Match.realised, Match.direction,
                                         Match.above_threshold, Match.embedding_realised, Match.embedding_direction,
                                         Score.verifier)
                                  .join(Score, Score.id == Match.score_id).where(Score.idea_pk == pk)).all()
        said: dict[str, dict[str, Any]] = {}
        for rank, paper, realised, direction, above, emb_r, emb_d, verifier in matches:
            real = bool(emb_r if verifier and emb_r is not None else realised if realised is not None else above)
            dire = bool(emb_d if verifier and emb_d is not None else direction if direction is not None else real)
            said[paper] = {"realised": real, "direction": dire, "rank": rank}
        pairs = set(row["reviewed"]) | set(row["same_problem"]) | set(row["same_problem_and_approach"])
        pairs |= {p for p, v in said.items() if v["rank"] <= shown}
        for paper in pairs:
            gold: dict[str, bool] = {"realised": paper in row["same_problem_and_approach"],
                    "direction": paper in row["same_problem"] or paper in row["same_problem_and_approach"]}
            for d in counts:
                call = bool(said.get(paper, {}).get(d, False))
                key = ("tp" if call else "fn") if gold[d] else ("fp" if call else "tn")
                counts[d][key] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", required=True)
    parser.add_argument("--truth", type=Path, nargs="+", required=True)
    parser.add_argument("--from-kinds", type=Path, help="Write the --truth file (one) from this labelled ideas file "
                                                        "(id, kind, source_paper_id) and the run's candidates, "
                                                        "then stop.")
    parser.add_argument("--n", type=int, default=25, help="Ideas labelled per system and draw.")
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--annotator", default="judged")
    parser.add_argument("--predictor", default="decision")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    settings = get_settings()
    migrate(settings.db_path)
    if args.from_kinds:
        with session_scope(settings.db_path) as s:
            rows = truth_from_kinds(s, [r.id for r in runs_of(s, args.run)], args.from_kinds,
                                    settings.labels.labels_top_k)
        args.truth[0].write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"wrote {len(rows)} truth rows to {args.truth[0]}")
        return
    truth = labels_of(args.truth)
    started = time.perf_counter()
    with session_scope(settings.db_path) as s:
        strata = runs_of(s, args.run)
        run_ids = [r.id for r in strata]
        system_of = {iid: sys_ for iid, sys_ in s.execute(
            select(Idea.idea_id, Run.system).join(Run, Run.id == Idea.run_id).where(Run.id.in_(run_ids))).all()}
        missing = sorted(set(truth) - set(system_of))
        if missing:
            sys.exit(f"{len(missing)} truth ideas are not in run {args.run}: {missing[:3]}")
        true_rates: dict[str, dict[str, float]] = {}
        for system in sorted({r.system for r in strata}):
            ids = [i for i in system_of if system_of[i] == system]
            unjudged = [i for i in ids if i not in truth]
            if unjudged:
                sys.exit(f"{system}: {len(unjudged)} ideas have no truth, so no full truth rate")
            true_rates[system] = {"realised_rate": float(np.mean([bool(truth[i]["same_problem_and_approach"])
                                                                  for i in ids])),
                                  "direction_rate": float(np.mean([bool(truth[i]["same_problem"]) for i in ids])),
                                  "ideas": len(ids)}
        draws = []
        for rep in range(args.draws):
            s.query(Draw).filter(Draw.run_id.in_(run_ids)).delete(synchronize_session=False)
            s.commit()
            draw(s, run=args.run, n=args.n, seed=rep)
            answer = labelled_summary(s, selection=Selection(runs=tuple(run_ids)), annotator=args.annotator,
                                      predictor=args.predictor, shown=settings.labels.labels_top_k,
                                      indexes_dir=settings.indexes_dir)
            draws.append(answer)
        independent = independent_agreement(s, run_ids, truth, settings.labels.labels_top_k)
        s.query(Draw).filter(Draw.run_id.in_(run_ids)).delete(synchronize_session=False)
        s.commit()
    systems = sorted(true_rates)
    report: dict = {"run": args.run, "n_per_system": args.n, "draws": args.draws, "predictor": args.predictor,
                    "truth": true_rates, "seconds": round(time.perf_counter() - started, 1), "groups": {},
                    "difference": {}}
    for system in systems:
        per: dict = {}
        for m in METRICS:
            row: dict = {"truth": true_rates[system][m]}
            for kind in ("labels_only", "ppi"):
                cis = [next(g for g in a["groups"] if g["group"] == system)[m][kind]["ci"] for a in draws]
                ses = [next(g for g in a["groups"] if g["group"] == system)[m][kind]["se"] for a in draws]
                row[kind] = {"covered": sum(lo <= row["truth"] <= hi for lo, hi in cis),
                             "mean_width": round(float(np.mean([hi - lo for lo, hi in cis])), 4),
                             "mean_width_unclipped": round(float(np.mean([2 * 1.959964 * x for x in ses])), 4)}
            gs = [next(g for g in a["groups"] if g["group"] == system)[m] for a in draws]
            row["matcher"] = gs[0]["matcher"]
            row["small_sample_draws"] = sum(g["small_sample"]["small"] for g in gs)
            row["mean_lambda"] = round(float(np.mean([np.mean(g["lambda"]) for g in gs])), 3)
            per[m] = row
        report["groups"][system] = per
    if len(systems) == 2:
        a, b = systems
        target = true_rates[a]["realised_rate"] - true_rates[b]["realised_rate"]
        row = {"a": a, "b": b, "truth": target}
        for kind in ("labels_only", "ppi"):
            cis = [next(d for d in x["differences"])["realised_rate"][kind]["ci"] for x in draws]
            ses = [next(d for d in x["differences"])["realised_rate"][kind]["se"] for x in draws]
            row[kind] = {"covered": sum(lo <= target <= hi for lo, hi in cis),
                         "mean_width": round(float(np.mean([hi - lo for lo, hi in cis])), 4),
                         "mean_width_unclipped": round(float(np.mean([2 * 1.959964 * x for x in ses])), 4)}
        report["difference"]["realised_rate"] = row
        target = true_rates[a]["direction_rate"] - true_rates[b]["direction_rate"]
        row = {"a": a, "b": b, "truth": target}
        for kind in ("labels_only", "ppi"):
            cis = [next(d for d in x["differences"])["direction_rate"][kind]["ci"] for x in draws]
            row[kind] = {"covered": sum(lo <= target <= hi for lo, hi in cis),
                         "mean_width": round(float(np.mean([hi - lo for lo, hi in cis])), 4)}
        report["difference"]["direction_rate"] = row
    first = draws[0]
    report["example_draw"] = {g["group"]: {m: {k: g[m][k] for k in ("matcher", "labels_only", "ppi", "n_labelled",
                                                                   "n_unlabelled", "labels_to_halve")}
                                          for m in (*METRICS, "mean_score")} | {
                                  "labelled_outside_draws": g["labelled_outside_draws"]}
                              for g in first["groups"]}
    report["example_warnings"] = first["warnings"]
    ours = first["agreement"]["overall"]["matcher"]["pair"]
    report["agreement"] = {"ideas": first["agreement"]["overall"]["ideas"],
                           "labels": {d: {k: ours[d][k] for k in ("tp", "fp", "fn", "tn", "precision", "recall")}
                                      for d in ours},
                           "idea": first["agreement"]["overall"]["matcher"]["idea"],
                           "independent": independent,
                           "equal": all(ours[d][k] == independent[d][k] for d in independent for k in independent[d])}
    text = json.dumps(report, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
