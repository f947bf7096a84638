"""`hindsight calibrate --matcher hybrid`: fit the realised / direction models on labelled ideas, judge them
out-of-fold by venue family, write the registry entry and the report."""

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from rich.table import Table
from sqlalchemy import select

from indexing import calibration as dense_cal
from indexing.build import embed_with_cache
from indexing.db import session_scope
from indexing.embedders import join, load_embedder
from indexing.lexical import build_lexical
from indexing.matcher import calibrate as cal
from indexing.matcher.evaluate import summarise
from indexing.matcher.features import N_CANDIDATES, ArrayCorpus, IdeaFacets
from indexing.matcher.model import DECISIONS, SHAPES, registry_name, user_registry, write_entry
from indexing.models import Paper
from service.cli.common import console, fail, print_json, progress_bars

HEADLINE = {"paraphrase": "source_realised", "loose": "source_realised", "hard_negative": "any_realised",
            "vague": "any_realised"}
BOUNDS = {"paraphrase": (">=", 0.85), "loose": (">=", 0.65), "hard_negative": ("<=", 0.10), "vague": ("<=", 0.05)}


def read_ideas(path: Path, embedder, position: dict[str, int]) -> tuple[list[cal.Labelled], list[dict]]:
    """Labelled ideas: kind, problem + method (or text), source paper id, venue (for folds)."""
    from service.cli.calibrate import read_records

    ideas, families, skipped = [], [], []
    for n, rec in read_records(path):
        if not isinstance(rec, dict):
            fail(f"{path}:{n}: each record must be an object")
        kind = rec.get("kind")
        if kind not in cal.KINDS:
            fail(f"{path}:{n}: field 'kind': {kind!r} is not one of {', '.join(sorted(cal.KINDS))}")
        problem, method, text = rec.get("problem"), rec.get("method"), rec.get("text")
        if not any(isinstance(v, str) and v.strip() for v in (problem, method, text)):
            fail(f"{path}:{n}: field 'problem': an idea needs 'problem' + 'method' or 'text'")
        source_id = rec.get("source_paper_id") or rec.get("paper_id") or rec.get("source")
        if kind not in cal.NONE_KINDS and not source_id:
            fail(f"{path}:{n}: field 'source_paper_id': a {kind} idea needs its source paper")
        if source_id and str(source_id) not in position:
            skipped.append({"line": n, "id": rec.get("id"), "source_paper_id": source_id})
            continue
        if text:
            facets = IdeaFacets(text.strip())
        else:
            p, m = (problem or "").strip(), (method or "").strip()
            facets = IdeaFacets(join(embedder, p, m), p or None, m or None, plain=p or m)
        families.append(rec.get("fold") or cal.venue_family(rec.get("source_venue")))
        ideas.append(cal.Labelled(id=str(rec.get("id") or f"line{n}"), kind=kind, facets=facets,
                                  source=position[str(source_id)] if source_id else None, fold="", line=n))
    for idea, fold in zip(ideas, cal.assign_folds(families)):
        idea.fold = fold
    if len({i.fold for i in ideas}) < 2:
        fail(f"{path}: leave-one-venue-out needs ideas from at least two venues (source_venue or fold)")
    return ideas, skipped


def run(*, pairs: Path, target: float, registry: Path | None, report: Path | None, settings, json_out: bool,
        model: str | None, candidates: int = N_CANDIDATES) -> None:
    embedder = load_embedder(model or settings.model, settings)
    with session_scope(settings.db_path) as session:
        rows = session.execute(select(Paper.paper_id, Paper.title, Paper.abstract).order_by(Paper.pk)).all()
    if not rows:
        fail("no papers in the database: ingest the corpus the ideas were written for (`hindsight ingest`)", 1)
    position = {r.paper_id: i for i, r in enumerate(rows)}
    ideas, skipped = read_ideas(pairs, embedder, position)
    with progress_bars(not json_out) as bars:
        vectors, embedded = embed_with_cache(embedder, [join(embedder, r.title, r.abstract) for r in rows],
                                             db_path=settings.db_path, batch_size=settings.batch_size, progress=bars)
        corpus = ArrayCorpus(vectors, build_lexical([r.title for r in rows], [r.abstract for r in rows]))
        encode = lambda texts: embedder.encode(texts, batch_size=settings.batch_size)  # noqa: E731
        stacks = {"facets": cal.Stacked.of(ideas, cal.build_candidates(ideas, corpus, encode, n=candidates)),
                  "text": cal.Stacked.of(ideas, cal.build_candidates(ideas, corpus, encode, n=candidates,
                                                                       text_only=True))}
    decisions: dict = {d: {} for d in DECISIONS}
    oof: dict = {}
    for shape in SHAPES:
        st = stacks[shape]
        probs, fold_t = {}, {}
        for d in DECISIONS:
            probs[d], fold_t[d] = cal.nested_oof(st, d, shape, target)
            final, _ = cal.fit_final(st, d, shape, target)
            decisions[d][shape] = final.as_dict()
        hybrid = summarise(cal.outcomes(st, probs["realised"], probs["direction"], fold_t["realised"],
                                        fold_t["direction"]))
        oof[shape] = {"hybrid": hybrid, "fold_thresholds": fold_t,
                      "curves": {d: cal.decision_curve(st, probs[d], d) for d in DECISIONS}}
    st = stacks["facets"]
    bm25_t = cal.feature_thresholds(st, "bm25_whole", target)
    dense_theta = embedder.theta
    oof["facets"]["dense"] = summarise(cal.feature_baseline(st, "cos_whole", dense_theta))
    oof["facets"]["bm25"] = summarise(cal.feature_baseline(st, "bm25_whole", bm25_t))
    idea_theta = idea_shaped_theta(st, target)
    oof["facets"]["dense_idea_theta"] = summarise(cal.feature_baseline(st, "cos_whole", idea_theta["per_fold"]))
    entry = {
        "model": embedder.key, "model_id": embedder.model_id, "revision": embedder.revision,
        "candidates": candidates, "target_false_match": target, "C": cal.C, "class_weight": cal.CLASS_WEIGHT,
        "floor": cal.FLOOR, "decisions": decisions, "pairs_file": pairs.name, "ideas": len(ideas),
        "kinds": {k: sum(i.kind == k for i in ideas) for k in sorted({i.kind for i in ideas})},
        "papers": len(rows), "folds": sorted({i.fold for i in ideas}),
        "baselines": {"bm25_whole_threshold": round(float(np.median(list(bm25_t.values()))), 6),
                      "dense_theta": dense_theta, "dense_theta_ideas": idea_theta["theta"]},
        "out_of_fold": {shape: {"hybrid": headline(oof[shape]["hybrid"])} for shape in SHAPES},
        "report": str(report) if report else None,
    }
    digest = hashlib.sha256(json.dumps(decisions, sort_keys=True).encode()).hexdigest()[:8]
    entry["version"] = f"hybrid-{datetime.now(timezone.utc):%Y%m%d}-{digest}"
    path = registry or user_registry(settings.home, embedder.key)
    written = write_entry(path, embedder.revision, entry)
    result = {"registry": str(path), "entry": written, "out_of_fold": oof, "skipped": skipped,
              "idea_theta": idea_theta, "papers_embedded_now": embedded}
    if report:
        write_report(report, result, stacks)
    if json_out:
        print_json({k: v for k, v in result.items() if k != "out_of_fold"} | {
            "out_of_fold": {s: {k: v for k, v in o.items() if k != "curves"} for s, o in oof.items()}})
        return
    print_summary(result)


def headline(summary: dict) -> dict:
    return {k: round(summary[k][m]["value"], 4) for k, m in HEADLINE.items() if k in summary and m in summary[k]}


def idea_shaped_theta(st: cal.Stacked, target: float) -> dict:
    """MiniLM's dense theta re-derived on idea-shaped pairs: (a) precision >= 0.9 on realised ideas' sources
    (as docs/calibration-minilm.md did with titles), (b) the target false-match rate on the negatives, per fold."""
    realised = [i for i, idea in enumerate(st.ideas) if idea.kind in cal.REALISED_KINDS]
    hits = []
    for i in realised:
        c = st.cands[i]
        order = np.argsort(-c.features["cos_whole"])[:20]
        hits.append([(str(c.positions[j]), float(c.features["cos_whole"][j])) for j in order])
    positives = [{str(st.ideas[i].source)} for i in realised]
    curve = dense_cal.pr_curve(positives, hits)
    pick = dense_cal.pick_theta(curve, 0.9)
    per_fold = cal.feature_thresholds(st, "cos_whole", target)
    return {"precision_0.9": pick.as_dict() if pick else None, "per_fold": per_fold,
            "theta": round(float(np.median(list(per_fold.values()))), 4), "target_false_match": target}


def print_summary(result: dict) -> None:
    e = result["entry"]
    console.print(f"fitted {e['version']} for {e['model']} ({e['revision']}) on {e['ideas']} ideas over "
                  f"{e['papers']} papers; written to {result['registry']}", highlight=False)
    for shape in SHAPES:
        table = Table("kind", "measure", "hybrid", "dense-only", "BM25-only",
                      title=f"{shape} ideas, out-of-fold (leave one venue family out)")
        o = result["out_of_fold"][shape]
        for kind, summary in o["hybrid"].items():
            for m in ("recall@1", "source_realised", "any_realised", "source_direction", "any_direction"):
                if m not in summary:
                    continue
                cells = [fmt(summary[m])]
                for base in ("dense", "bm25"):
                    cells.append(fmt(o[base][kind][m]) if base in o and kind in o[base] and m in o[base][kind]
                                 else "-")
                table.add_row(kind, m, *cells)
        console.print(table)
    t = result["idea_theta"]
    console.print(f"MiniLM dense theta on idea-shaped pairs: {t['theta']} (target false-match {t['target_false_match']}"
                  f"; precision-0.9 pick {t['precision_0.9']['theta'] if t['precision_0.9'] else 'none'}) vs the "
                  f"title-based {e['baselines']['dense_theta']}", highlight=False)


def fmt(iv: dict) -> str:
    return "-" if iv["value"] is None else f"{iv['value']:.3f} [{iv['low']:.2f}, {iv['high']:.2f}]"


def write_report(path: Path, result: dict, stacks: dict) -> None:
    """docs/calibration-hybrid.md with its curves (PNG) and the figures as JSON beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    e = result["entry"]
    path.parent.mkdir(parents=True, exist_ok=True)
    png = path.with_suffix(".png")
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for r, shape in enumerate(SHAPES):
        for c, d in enumerate(DECISIONS):
            ax = axes[r][c]
            curve = result["out_of_fold"][shape]["curves"][d]
            t = [p["threshold"] for p in curve]
            for key in curve[0]:
                if key != "threshold":
                    ax.plot(t, [p[key] for p in curve], label=key, linestyle="-" if key.endswith("source") else "--")
            ax.axvline(e["decisions"][d][shape]["threshold"], color="grey", linestyle=":",
                       label=f"threshold {e['decisions'][d][shape]['threshold']:.3f}")
            ax.set_title(f"{d}, {shape} ideas (out-of-fold)", fontsize=9)
            ax.set_xlabel(f"p_{d} threshold")
            ax.set_ylim(-0.02, 1.02)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    lines = [f"# Hybrid matcher calibration ({e['model']}, revision {e['revision']})", "",
             f"Written by `hindsight calibrate --matcher hybrid --pairs {e['pairs_file']}` on "
             f"{e['written'][:10]}: {e['ideas']} labelled ideas "
             f"({', '.join(f'{v} {k}' for k, v in e['kinds'].items())}) "
             f"over {e['papers']} papers; matcher version `{e['version']}`, registry `{result['registry']}`.", "",
             "## Method", "",
             f"* Candidates: dense top-{e['candidates']} and BM25 top-{e['candidates']} of the whole idea, merged.",
             "* Folds: leave one venue family out (" + ", ".join(e["folds"]) + "); vague ideas, which have no venue, "
             "are dealt round-robin over the folds. Figures below are nested out-of-fold: for each held-out family "
             "the model is fitted on the other three and its threshold picked on their inner leave-one-out "
             "predictions.",
             f"* Model: standardised logistic regression, L2 with C = {e['C']}, unweighted classes. Threshold: the "
             f"smallest probability >= {e['floor']} at which every negative kind's any-match rate is <= "
             f"{e['target_false_match']:.0%} (realised: hard negatives and vague ideas; direction: vague ideas).",
             "* Text-only ideas (`text` instead of problem + method, or an empty facet) use separate models fitted on "
             "the same ideas with problem and method joined into one text; they have only whole-idea features.", "",
             "## Chosen thresholds and weights", "",
             "Weights are per standardised feature (value minus mean, over scale); positive favours a match.", ""]
    for d in DECISIONS:
        for shape in SHAPES:
            m = e["decisions"][d][shape]
            lines += [f"**{d}, {shape}**: threshold **{m['threshold']:.4f}**, intercept {m['intercept']:.3f}", "",
                      "| feature | weight | mean | scale |", "|---|---|---|---|"]
            lines += [f"| {f} | {w:+.3f} | {mu:.4f} | {s:.4f} |"
                      for f, w, mu, s in zip(m["features"], m["coef"], m["mean"], m["scale"])]
            lines.append("")
    for shape in SHAPES:
        o = result["out_of_fold"][shape]
        lines += [f"## Out-of-fold figures, {shape} ideas", "",
                  "Rates with 95% bootstrap intervals over ideas. Bounds: paraphrase source realised >= 0.85, loose "
                  ">= 0.65, hard negatives and vague ideas matching anything <= 0.10 and <= 0.05.", "",
                  "| kind | measure | hybrid | dense-only (theta) | BM25-only | dense at idea theta |",
                  "|---|---|---|---|---|---|"]
        for kind, summary in o["hybrid"].items():
            for m in ("recall@1", "recall@20", "source_realised", "any_realised", "source_direction",
                      "any_direction"):
                if m not in summary:
                    continue
                cells = [fmt(summary[m])]
                for base in ("dense", "bm25", "dense_idea_theta"):
                    cells.append(fmt(o[base][kind][m]) if base in o and kind in o[base] and m in o[base][kind]
                                 else "-")
                lines.append(f"| {kind} | {m} | " + " | ".join(cells) + " |")
        lines += ["", "Per-fold thresholds (picked without the fold): " + "; ".join(
            f"{d}: " + ", ".join(f"{f} {t:.3f}" for f, t in o["fold_thresholds"][d].items()) for d in DECISIONS), ""]
    t = result["idea_theta"]
    p9 = t["precision_0.9"]
    lines += ["## MiniLM's dense theta on idea-shaped pairs", "",
              f"The title-based theta is {e['baselines']['dense_theta']} (docs/calibration-minilm.md: titles against "
              "abstracts). On these ideas: ",
              f"* at precision >= 0.90 over the realised ideas' retrieved pairs: theta "
              f"{p9['theta'] if p9 else 'none'}" + (f" (recall {p9['recall']:.3f})" if p9 else ""),
              f"* at the target false-match rate ({t['target_false_match']:.0%} of hard negatives and of vague ideas "
              f"matching anything), picked per fold on the other folds: median **{t['theta']}** "
              f"(" + ", ".join(f"{f} {v:.3f}" for f, v in t["per_fold"].items()) + ")",
              "", "The dense-only columns above use the title-based theta; the last column uses the per-fold "
              "idea-shaped theta.", "",
              f"![out-of-fold curves]({png.name})", "",
              "## Recalibrating", "",
              "```bash",
              "hindsight ingest PAPERS...                     # the corpus your ideas were written against",
              "hindsight calibrate --matcher hybrid --pairs IDEAS.jsonl \\",
              f"    [--registry indexing/matcher/registry/{registry_name(e['model'])}] "
              "[--report docs/calibration-hybrid.md]",
              "hindsight index build                          # a build records the entry in its manifest",
              "```", ""]
    path.write_text("\n".join(lines))
    slim = {s: {k: v for k, v in o.items()} for s, o in result["out_of_fold"].items()}
    path.with_suffix(".json").write_text(json.dumps({"entry": e, "out_of_fold": slim, "idea_theta": t},
                                                    indent=1, default=float) + "\n")
