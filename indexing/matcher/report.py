"""The hybrid calibration report: docs/calibration-hybrid.md, its curves (PNG) and the figures as JSON."""

import json
from pathlib import Path

from indexing.matcher.model import DECISIONS, RULES, SHAPES, registry_name

MEASURES = ("recall@1", "recall@20", "source_realised", "any_realised", "source_direction", "any_direction")
BASELINES = ("dense", "bm25", "dense_idea_theta")


def fmt(iv: dict) -> str:
    return "-" if iv["value"] is None else f"{iv['value']:.3f} [{iv['low']:.2f}, {iv['high']:.2f}]"


def plot_curves(png: Path, result: dict) -> None:
    """Out-of-fold rates against each decision's threshold, per idea shape."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    e = result["entry"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for r, shape in enumerate(SHAPES):
        for c, d in enumerate(DECISIONS):
            ax = axes[r][c]
            curve = result["out_of_fold"][shape]["curves"][d]
            t = [p["threshold"] for p in curve]
            for key in curve[0]:
                if key != "threshold":
                    ax.plot(t, [p[key] for p in curve], label=key, linestyle="-" if key.endswith("source") else "--")
            if d in e["decisions"]:
                ax.axvline(e["decisions"][d][shape]["threshold"], color="grey", linestyle=":",
                           label=f"threshold {e['decisions'][d][shape]['threshold']:.3f}")
            ax.set_title(f"{d}, {shape} ideas (out-of-fold)", fontsize=9)
            ax.set_xlabel("p_direction threshold" if d == "direction" else "p_direction * p_method")
            ax.set_ylim(-0.02, 1.02)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def method_section(e: dict) -> list[str]:
    return ["## Method", "",
            "* Realised = the paper works on the idea's problem AND uses its method: two calibrated models, "
            "`direction` (the idea's problem against the paper) and `method` (its method against the paper); a "
            "match is a direction match when p_direction >= its threshold and realised when, in addition, "
            "p_method >= its threshold. Realised implies direction by construction. Matches rank by p_realised = "
            "p_direction * p_method.",
            f"* Candidates: dense and BM25 top-{e['candidates']} of the whole idea and of its problem, merged."
            + (f" Every feature is the pair's alone (cosines, lexical coverage weighed by the reference lexicon "
               f"`{e['lexicon']}`, both also against the reference papers (`{e['spread']}`), the idea's length), "
               "so a pair is decided the same in every window." if e.get("lexicon") else ""),
            "* Negatives: hard negatives (same problem, another method), vague ideas, and method swaps made in code "
            "from the labelled set (the problem of idea i with the method of another idea of the same field: its "
            "direction paper is i's source, the paper that has its method is j's, on another problem).",
            "* Fields: leave one field out (" + ", ".join(e["folds"]) + "); vague ideas, which have no venue, are "
            "dealt round-robin over their file's fields. Figures below are nested out-of-fold: for each held-out "
            "field the models are fitted on the others and the thresholds picked on their inner leave-one-field-out "
            "predictions (every fit sees at least two fields).",
            f"* Models: standardised logistic regression, L2 with C = {e['C']}. Thresholds: direction's is the "
            f"smallest probability at which at most {e.get('direction_target', e['target_false_match']):.0%} of vague "
            "ideas match anything; method's, given it, the smallest at which hard negatives, method swaps and vague "
            f"ideas each realise anything for at most {e['target_false_match']:.0%} of their ideas.",
            "* Text-only ideas (`text` instead of problem + method) use models fitted on the same ideas with problem "
            "and method joined into one text; they have whole-idea features"
            + (" and the lesser of the text's two halves (a swap's source holds one half, a realisation both); a "
               "swap's method paper is not a method positive there." if e.get("lexicon") else " only."), ""]


def weights_section(e: dict) -> list[str]:
    lines = ["## Chosen thresholds and weights", "",
             "Weights are per standardised feature (value minus mean, over scale); positive favours a match.", ""]
    for d in RULES[e.get("rule", "realised_model")]:
        for shape in SHAPES:
            m = e["decisions"][d][shape]
            lines += [f"**{d}, {shape}**: threshold **{m['threshold']:.4f}**, intercept {m['intercept']:.3f}", "",
                      "| feature | weight | mean | scale |", "|---|---|---|---|"]
            lines += [f"| {f} | {w:+.3f} | {mu:.4f} | {s:.4f} |"
                      for f, w, mu, s in zip(m["features"], m["coef"], m["mean"], m["scale"])]
            lines.append("")
    return lines


def kind_table(summary_of: dict, columns: dict[str, str]) -> list[str]:
    """Rows kind x measure, one column per named summary ({kind: {measure: interval}})."""
    lines = ["| kind | measure | " + " | ".join(columns.values()) + " |", "|---|---|" + "---|" * len(columns)]
    first = next(iter(summary_of.values()))
    for kind, summary in first.items():
        for m in MEASURES:
            if m in summary:
                cells = [fmt(summary_of[c][kind][m]) if kind in summary_of.get(c, {}) and m in summary_of[c][kind]
                         else "-" for c in columns]
                lines.append(f"| {kind} | {m} | " + " | ".join(cells) + " |")
    return lines


NEGATIVES = ("hard_negative", "method_swap", "vague")


def group_table(groups: dict) -> list[str]:
    """Rows per kind, one column per group, the rate its bound is on: the source realised, for negatives any."""
    first = next(iter(groups.values()))
    lines = ["| kind | measure | " + " | ".join(groups) + " |", "|---|---|" + "---|" * len(groups)]
    for kind in first:
        m = "any_realised" if kind in NEGATIVES else "source_realised"
        lines.append(f"| {kind} | {m} | " + " | ".join(
            fmt(groups[g][kind][m]) if m in groups[g].get(kind, {}) else "-" for g in groups) + " |")
    return lines


def figures_section(shape: str, o: dict, json_name: str) -> list[str]:
    lines = [f"## Out-of-fold figures, {shape} ideas", "",
             "Rates with 95% bootstrap intervals over ideas. Bounds (issue 18): faithful (paraphrase) source "
             "realised >= 0.85, loose >= 0.70; anything realised <= 0.10 for hard negatives and method swaps, "
             "<= 0.05 for vague ideas; the source a direction match >= 0.90 for paraphrase, loose and hard "
             "negatives.", ""]
    lines += kind_table(o, {"hybrid": "hybrid", "dense": "dense-only (theta)", "bm25": "BM25-only",
                            "dense_idea_theta": "dense at idea theta"})
    for title, groups in (("field", o.get("per_field", {})), ("style", o.get("per_style", {}))):
        if groups:
            lines += ["", f"Hybrid, per {title} (each judged by models that never saw " +
                      ("it)" if title == "field" else "its field)") + "; every measure in "
                      f"[{json_name}]({json_name}), `out_of_fold.{shape}.per_{title}`:", ""]
            lines += group_table(groups)
    return lines + ["", "Per-field thresholds (picked without the field): " + "; ".join(
        f"{f}: " + ", ".join(f"{m} {t:.3f}" for m, t in ts.items()) for f, ts in o["fold_thresholds"].items()), ""]


def theta_section(e: dict, t: dict, png: str) -> list[str]:
    p9 = t["precision_0.9"]
    return ["## MiniLM's dense theta on idea-shaped pairs", "",
            f"The title-based theta is {e['baselines']['dense_theta']} (docs/calibration-minilm.md: titles against "
            "abstracts). On these ideas: ",
            f"* at precision >= 0.90 over the realised ideas' retrieved pairs: theta "
            f"{p9['theta'] if p9 else 'none'}" + (f" (recall {p9['recall']:.3f})" if p9 else ""),
            f"* at the target false-match rate ({t['target_false_match']:.0%} of hard negatives and of vague ideas "
            f"matching anything), picked per fold on the other folds: median **{t['theta']}** "
            "(" + ", ".join(f"{f} {v:.3f}" for f, v in t["per_fold"].items()) + ")",
            "", "The dense-only columns above use the title-based theta; the last column uses the per-fold "
            "idea-shaped theta.", "", f"![out-of-fold curves]({png})", ""]


def recalibrating_section(e: dict) -> list[str]:
    return ["## Recalibrating", "", "```bash",
            "hindsight ingest PAPERS...                     # the corpus your ideas were written against",
            "hindsight calibrate --matcher hybrid --pairs IDEAS.jsonl \\",
            f"    [--registry indexing/matcher/registry/{registry_name(e['model'])}] "
            "[--report docs/calibration-hybrid.md]",
            "hindsight index build                          # a build records the entry in its manifest",
            "```", ""]


def report_text(result: dict, png_name: str, json_name: str) -> str:
    """The report's markdown: method, weights, the out-of-fold figures (per field and style: the bounded rate)."""
    e = result["entry"]
    lines = [f"# Hybrid matcher calibration ({e['model']}, revision {e['revision']})", "",
             f"Written by `hindsight calibrate --matcher hybrid --pairs {e['pairs_file']}` on "
             f"{e['written'][:10]}: {e['ideas']} labelled ideas "
             f"({', '.join(f'{v} {k}' for k, v in e['kinds'].items())}) "
             f"over {e['papers']} papers; matcher version `{e['version']}`, registry `{result['registry']}`.", ""]
    lines += method_section(e) + weights_section(e)
    for shape in SHAPES:
        lines += figures_section(shape, result["out_of_fold"][shape], json_name)
    lines += theta_section(e, result["idea_theta"], png_name) + recalibrating_section(e)
    return "\n".join(lines)


def write_report(path: Path, result: dict) -> None:
    """docs/calibration-hybrid.md with its curves (PNG) and the figures as JSON beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    png, figures = path.with_suffix(".png"), path.with_suffix(".json")
    plot_curves(png, result)
    path.write_text(report_text(result, png.name, figures.name))
    figures.write_text(json.dumps({"entry": result["entry"], "out_of_fold": result["out_of_fold"],
                                   "idea_theta": result["idea_theta"]}, indent=1, default=float) + "\n")
