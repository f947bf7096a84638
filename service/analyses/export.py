"""Flat tables of the analysis answers, for CSV export."""

import csv
import io

from service.analyses.quadrants import QUADRANTS
from service.analyses.selection import AnalysisError
from service.judge_scores import DIMENSIONS

TABLES = {"systems": ("groups", "comparisons"), "correlations": ("rows",), "quadrants": ("counts", "ideas")}


def to_csv(rows: list[dict]) -> str:
    """CSV text with a header from the union of the row keys, in first-seen order."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
    return out.getvalue()


def _cell(value):
    """A spreadsheet would run text starting with = + - @ as a formula (idea ids and titles are caller text)."""
    if value is None:
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def systems_groups_rows(answer: dict) -> list[dict]:
    rows = []
    for g in answer["groups"]:
        ci = g["ci"] or [None, None]
        row = {"group": g["group"], "system": g["system"], "runs": " ".join(g["runs"]), "ideas": g["ideas"],
               "mean_score": g["mean_score"], "ci_low": ci[0], "ci_high": ci[1], "median_score": g["median_score"],
               "matched": g["matched"], "match_rate": g["match_rate"], "windows": " ".join(g.get("windows", [])),
               "leak_risk_ideas": g.get("leak_risk_ideas", 0)}
        for judge, dims in g["judges"].items():
            for dim in DIMENSIONS:
                row[f"{judge}.{dim}"] = dims[dim]["mean"]
        prior = g.get("prior_art")
        if prior:
            row["anticipation_score"] = prior["anticipation_score"]
            row["anticipation_ci_low"], row["anticipation_ci_high"] = prior["anticipation_ci"] or [None, None]
            row["prior_art_unknown"] = prior["unknown"]
            for level, rates in prior["rates"].items():
                for cls, rate in rates.items():
                    row[f"{level}.{cls}_rate"] = rate["rate"]
                    row[f"{level}.{cls}_ci_low"], row[f"{level}.{cls}_ci_high"] = rate["ci"] or [None, None]
        rows.append(row)
    return rows


def systems_comparison_rows(answer: dict) -> list[dict]:
    return [{**{k: v for k, v in c.items() if k != "effect_size"}, "effect_size": c["effect_size"]["name"],
             "effect_value": c["effect_size"]["value"]} for c in answer["comparisons"]]


def quadrant_count_rows(answer: dict) -> list[dict]:
    rows = []
    for c in answer["counts"]:
        row = {"judge": answer["judge"], "dimension": answer["dimension"], "group": c["group"], "ideas": c["ideas"],
               "judged": c["judged"], "unjudged": c["unjudged"]}
        for key in QUADRANTS:
            row[f"{key}_count"], row[f"{key}_share"] = c[key]["count"], c[key]["share"]
        rows.append(row)
    return rows


def quadrant_idea_rows(answer: dict) -> list[dict]:
    rows = []
    for listing in answer["ideas"].values():
        for item in listing["items"]:
            best = item["best_match"] or {}
            rows.append({"judge": answer["judge"], "dimension": answer["dimension"],
                         **{k: v for k, v in item.items() if k != "best_match"},
                         **{f"best_{k}": best.get(k) for k in ("paper_id", "title", "venue", "year", "similarity",
                                                               "impact", "above_threshold")}})
    return rows


def table_rows(kind: str, answer: dict, table: str | None = None) -> list[dict]:
    """The rows of one table of an answer; the first table of the kind by default."""
    table = table or TABLES[kind][0]
    if table not in TABLES[kind]:
        raise AnalysisError("table", f"{kind} has the tables {', '.join(TABLES[kind])}, not {table!r}")
    if kind == "systems":
        return systems_groups_rows(answer) if table == "groups" else systems_comparison_rows(answer)
    if kind == "correlations":  # the score's rows, then had-prior-art's (x names which)
        prior = (answer.get("prior_art") or {}).get("rows", [])
        return [{"x": x, **{k: v for k, v in r.items() if k not in ("ci", "had_prior_art")},
                 "ci_low": (r.get("ci") or [None, None])[0], "ci_high": (r.get("ci") or [None, None])[1]}
                for x, rows in (("hindsight_score", answer["rows"]), ("had_prior_art", prior)) for r in rows]
    return quadrant_count_rows(answer) if table == "counts" else quadrant_idea_rows(answer)
