"""Out-of-fold figures of two hybrid fits side by side, per field and per kind, from their calibration JSON.

Usage: .venv/bin/python scripts/calibration_compare.py OLD.json NEW.json [--title T]
Prints markdown: for each idea shape, one row per kind and measure, one column per held-out field and one for
all fields; a cell is the new fit's rate, or "old -> new" where the two differ. Every kind's bounded rate and its
direction rate are always shown; the other measures only where some field moved.
"""

import argparse
import json
from pathlib import Path

from indexing.matcher.report import MEASURES, NEGATIVES

SHOWN = {"source_realised", "source_direction"}
SHOWN_NEGATIVE = {"any_realised", "any_direction"}


def rate(summary: dict, kind: str, measure: str) -> float | None:
    value = summary.get(kind, {}).get(measure, {}).get("value")
    return None if value is None else round(value, 3)


def show(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def cell(old: float | None, new: float | None) -> str:
    return show(new) if old == new else f"{show(old)} -> {show(new)}"


def shape_table(old: dict, new: dict) -> list[str]:
    """Rows kind x measure; columns each held-out field, then all fields."""
    groups = {f: (old["per_field"].get(f, {}), new["per_field"][f]) for f in new["per_field"]}
    groups["all"] = (old["hybrid"], new["hybrid"])
    lines = ["| kind | measure | " + " | ".join(groups) + " |", "|---|---|" + "---|" * len(groups)]
    for kind in new["hybrid"]:
        always = SHOWN_NEGATIVE if kind in NEGATIVES else SHOWN
        for m in MEASURES:
            pairs = [(rate(o, kind, m), rate(n, kind, m)) for o, n in groups.values()]
            if all(n is None for _, n in pairs) or (m not in always and all(o == n for o, n in pairs)):
                continue
            lines.append(f"| {kind} | {m} | " + " | ".join(cell(o, n) for o, n in pairs) + " |")
    return lines


def compare(old: dict, new: dict) -> list[str]:
    eo, en = old["entry"], new["entry"]
    lines = [f"`{en['revision']}` (`{en['version']}`) against `{eo['revision']}` (`{eo['version']}`); "
             f"{en['ideas']} labelled ideas over {en['papers']} papers for both.", ""]
    for shape in new["out_of_fold"]:
        lines += [f"{shape.capitalize()} ideas, hybrid, out of fold (each field judged by models fitted without it):",
                  ""] + shape_table(old["out_of_fold"][shape], new["out_of_fold"][shape]) + [""]
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--title", default="")
    a = p.parse_args()
    lines = ([f"## {a.title}", ""] if a.title else []) + compare(json.loads(a.old.read_text()),
                                                               json.loads(a.new.read_text()))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
