"""The report's sections from the gathered answers: sentences, tables and the plots they show."""

from service.analyses import QUADRANTS
from service.report.gather import Report
from service.report.labels import labels_section
from service.report.parts import CLASS_NAMES, Section, Table, fmt, pct, pval, rate_ci, warnings, with_ci
from service.report.provenance import provenance_section


def measure_name(row: dict) -> str:
    """A comparison row's measure, as `hindsight analyze systems` names it."""
    if row["metric"] == "hindsight":
        return "HindSight score"
    if row["metric"] == "anticipation":
        return "anticipation score"
    if row["metric"].startswith("rate_"):
        return f"{row['metric'][5:].replace('_', ' ')} rate"
    return f"{row['judge']} · {row['dimension']}"


def _scored(report: Report, s: Section) -> dict | None:
    """The systems answer when it holds a scored group; else None, and the section carries its sentence saying why."""
    if report.systems and report.systems["groups"]:
        return report.systems
    s.why = report.why.get(s.key)
    return None


def systems_section(report: Report) -> Section:
    s = Section("systems", "Systems")
    answer = _scored(report, s)
    if answer is None:
        return s
    judges = answer["judges"]
    b = answer["bootstrap"]
    chosen = answer["selection"]
    s.text.append(f"Per {chosen['group_by']}: the mean HindSight score at the {chosen['level']} level with its "
                  f"{100 * b['confidence_level']:g}% {b['method']} bootstrap interval ({b['n_resamples']} resamples, "
                  f"seed {b['seed']}), the median, the match rate and each judge's mean overall score.")
    s.tables.append(Table("systems-table", "HindSight per group",
                          ["group", "ideas", "mean [95% CI]", "median", "match rate",
                           *(f"{j} overall" for j in judges)],
                          [[g["group"], str(g["ideas"]), with_ci(g["mean_score"], g["ci"]), fmt(g["median_score"]),
                            f"{pct(g['match_rate'])} ({g['matched']})",
                            *(fmt(g["judges"][j]["overall"]["mean"], 2) for j in judges)] for g in answer["groups"]]))
    if answer["unscored_ideas"]:
        s.text.append(f"{answer['unscored_ideas']} ideas of the selected runs have no score and are left out.")
    s.plots.append("systems")
    s.warnings = warnings(answer) + report.notes
    return s


def comparison_section(report: Report) -> Section:
    s = Section("comparison", "Comparison")
    rows = (report.systems or {}).get("comparisons") or []
    if not rows:
        s.why = report.why.get("comparison", "There is nothing to compare.")
        return s
    s.text.append("Each pair of groups on each measure: the two means, the Mann-Whitney U and Welch t-test p-values, "
                  "and Cliff's delta of a over b.")
    s.tables.append(Table("comparison-table", "Comparisons between groups",
                          ["a", "b", "measure", "mean a", "mean b", "Mann-Whitney p", "Welch p", "Cliff's delta"],
                          [[r["a"], r["b"], measure_name(r), fmt(r["mean_a"]), fmt(r["mean_b"]),
                            pval(r["mannwhitney_p"]), pval(r["welch_p"]), fmt(r["effect_size"]["value"], 2)]
                           for r in rows]))
    return s


def prior_art_section(report: Report) -> Section:
    s = Section("prior-art", "Prior art")
    answer = report.systems or {}
    summary = answer.get("prior_art")
    if not summary:
        s.why = report.why.get("prior_art")
        return s
    groups = [g for g in answer["groups"] if g.get("prior_art")]
    s.text.append("Each idea's class from its two sides of the cutoff: anticipated (matched after it, not before), "
                  "recalled (both), already published (before only), unrealised (neither); rates over the ideas of "
                  f"known class with Wilson intervals. The anticipation score is {summary['anticipation']}.")
    for level in summary["levels"]:
        s.tables.append(Table(f"prior-art-{level}", f"Prior-art classes, {level} level: % of known [95% CI]",
                              ["group", *CLASS_NAMES.values(), "unknown"],
                              [[g["group"], *(rate_ci(g["prior_art"]["rates"][level][c]) for c in CLASS_NAMES),
                                str(g["prior_art"]["unknown"])] for g in groups]))
    s.tables.append(Table("anticipation-table", f"Anticipation score ({summary['level']} level) beside HindSight",
                          ["group", "anticipation [95% CI]", "HindSight mean", "look-back windows",
                           "with readable prior art", "with later prior art"],
                          [[g["group"],
                            with_ci(g["prior_art"]["anticipation_score"], g["prior_art"]["anticipation_ci"]),
                            fmt(g["mean_score"]), ", ".join(g["prior_art"]["lookback_windows"]),
                            str(g["prior_art"]["readable_prior_art"] if g["prior_art"]["knowledge_cutoffs"] else "–"),
                            str(g["prior_art"]["later_prior_art"] if g["prior_art"]["knowledge_cutoffs"] else "–")]
                           for g in groups]))
    s.plots.append("prior-art")
    s.warnings = warnings(summary)
    return s


def quadrants_section(report: Report) -> Section:
    s = Section("quadrants", "Quadrants against the judge")
    answer = report.quadrants
    if not answer:
        s.why = report.why.get("quadrants")
        return s
    s.text.append(f"{answer['judge']} · {answer['dimension']}: {answer['cuts']['hindsight']['rule']}; "
                  f"{answer['cuts']['judge']['rule']}.")
    s.tables.append(Table("quadrant-counts", "Ideas per quadrant: count (share of the judged)",
                          ["group", "judged", *(label for label, _, _ in QUADRANTS.values())],
                          [[c["group"], str(c["judged"]) + (f" (+{c['unjudged']} unjudged)" if c["unjudged"] else ""),
                            *(f"{c[k]['count']} ({pct(c[k]['share'])})" for k in QUADRANTS)]
                           for c in answer["counts"]]))
    s.plots.append("quadrants")
    for key, listing in answer["ideas"].items():
        if not listing["items"]:
            continue
        s.tables.append(Table(f"quadrant-{key}", f"{listing['label']}: the first {len(listing['items'])} of "
                                                  f"{listing['total']} by HindSight score",
                              ["idea", "group", "HindSight", "judge", "best match"],
                              [[it["idea_id"], it["group"], fmt(it["score"]), fmt(it["judge_value"], 1),
                                f"{it['best_match']['title']} ({it['best_match']['similarity']:.2f})"
                                if it["best_match"] else "–"] for it in listing["items"]]))
    s.warnings = warnings(answer)
    return s


def _rho_ci(r: dict) -> str:
    return f"[{r['ci'][0]:.2f}, {r['ci'][1]:.2f}]" if r.get("ci") else "–"


def correlations_section(report: Report) -> Section:
    s = Section("correlations", "Correlations with the judge")
    answer = report.correlations
    if not answer:
        s.why = report.why.get("correlations")
        return s
    s.text.append("Spearman's rho between the HindSight score and each judge dimension, overall and per group, with "
                  "its 95% interval (Fisher z, Bonett-Wright) and p-value.")
    s.tables.append(Table("correlations-table", "Spearman correlation with the HindSight score",
                          ["scope", "judge", "dimension", "n", "rho", "95% CI", "p"],
                          [[r["scope"], r["judge"], r["dimension"], str(r["n"]), fmt(r["rho"], 2), _rho_ci(r),
                            pval(r["p"])] for r in answer["rows"]]))
    prior = answer.get("prior_art")
    if prior:
        s.tables.append(Table("prior-art-correlations", "Spearman correlation with had prior art",
                              ["scope", "judge", "dimension", "n", "had", "rho", "95% CI", "p"],
                              [[r["scope"], r["judge"], r["dimension"], str(r["n"]), str(r["had_prior_art"]),
                                fmt(r["rho"], 2), _rho_ci(r), pval(r["p"])] for r in prior["rows"]]))
    s.warnings = warnings(answer)
    return s


def distributions_section(report: Report) -> Section:
    s = Section("distributions", "Score distributions")
    answer = _scored(report, s)
    if answer is None:
        return s
    s.tables.append(Table("distribution-table", "HindSight score per group",
                          ["group", "ideas", "mean", "median", "matched", "match rate", "leak-risk ideas"],
                          [[g["group"], str(g["ideas"]), fmt(g["mean_score"]), fmt(g["median_score"]),
                            str(g["matched"]), pct(g["match_rate"]), str(g["leak_risk_ideas"])]
                           for g in answer["groups"]]))
    s.plots.append("distributions")
    return s


def sections(report: Report) -> list[Section]:
    """Every section in the report's order; an empty one carries the sentence saying why."""
    return [provenance_section(report.provenance, report.selection.as_dict(), report.generated),
            systems_section(report), comparison_section(report), prior_art_section(report), quadrants_section(report),
            correlations_section(report), distributions_section(report),
            labels_section(report.labels, report.why.get("labels"))]
