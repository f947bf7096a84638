"""The section of the estimates from labels: the matcher's figure, the labels alone and PPI++ per group, their
differences, and the matcher measured on the labels."""

from service.report.parts import CLASS_NAMES, Section, Table, fmt, warnings

MEASURES = {"realised_rate": "realised rate", "direction_rate": "direction rate", "mean_score": "mean score"}


def estimate(e: dict | None) -> str:
    """A value and its interval, marked * when pseudo-observations made the interval (few labels)."""
    if not e or e.get("value") is None:
        return "–"
    mark = "*" if e.get("method") == "pseudo_counts" else ""
    return f"{e['value']:.3f}{mark} [{e['ci'][0]:.3f}, {e['ci'][1]:.3f}]" if e.get("ci") else f"{e['value']:.3f}{mark}"


def _row(group: str, name: str, e: dict) -> list[str]:
    halve = e.get("labels_to_halve")
    return [group, name, fmt(e["matcher"]), estimate(e["labels_only"]), estimate(e["ppi"]), str(e["n_labelled"]),
            str(e["n_unlabelled"]), "–" if halve is None else str(halve)]


def _agreement_rows(answer: dict) -> list[list[str]]:
    agreement = answer["agreement"]
    lookback = agreement.get("lookback")
    scopes = [("all", agreement["overall"]), *agreement["groups"].items(),
              *([("look-back side", lookback)] if lookback and lookback["ideas"] else [])]
    rows = []
    for scope, a in scopes:
        for who in ("matcher", "verifier"):
            if not a.get(who):
                continue
            for level in ("pair", "idea"):
                for decision, k in a[who][level].items():
                    rows.append([scope, who, level, decision, *(str(k[x]) for x in ("tp", "fp", "fn", "tn")),
                                 fmt(k["precision"], 2), fmt(k["recall"], 2)])
    return rows


def labels_section(answer: dict | None, why: str | None) -> Section:
    """The section, or its sentence saying why it is empty."""
    s = Section("labels", "Estimates from labels")
    if not answer:
        s.why = why
        return s
    level = answer["selection"]["level"]
    s.text.append(f"From {answer['annotator']}'s labels ({answer['annotator_rule']}) of random draws, with "
                  f"{100 * answer['confidence']:g}% intervals; predictor {answer['predictor']['name']}: "
                  f"{answer['predictor']['text']}. matcher: the stored decisions over every idea; labels: the labelled "
                  "sample alone; PPI++: prediction-powered. n labelled, N unlabelled, +n: labels that would halve the "
                  "PPI++ interval; * marks an interval with pseudo-observations (few labels).")
    rows = []
    for g in answer["groups"]:
        rows += [_row(g["group"], name, g[m]) for m, name in MEASURES.items()]
        for cls, name in CLASS_NAMES.items():
            e = g.get("classes", {}).get(level, {}).get(cls)
            if e and (e.get("labels_only") or {}).get("value") is not None:
                rows.append(_row(g["group"], f"{name} ({level})", e))
    s.tables.append(Table("estimates-table", "The three estimates per group",
                          ["group", "measure", "matcher", "labels [CI]", "PPI++ [CI]", "n", "N", "+n"], rows))
    if answer["differences"]:
        s.tables.append(Table("differences-table", "Differences between groups (a - b)",
                              ["a", "b", "measure", "matcher", "labels [CI]", "PPI++ [CI]"],
                              [[d["a"], d["b"], name, fmt(d[m]["matcher"]), estimate(d[m]["labels_only"]),
                                estimate(d[m]["ppi"])] for d in answer["differences"] for m, name in MEASURES.items()]))
    s.tables.append(Table("agreement-table", "The matcher on the labels",
                          ["scope", "who", "level", "decision", "tp", "fp", "fn", "tn", "precision", "recall"],
                          _agreement_rows(answer)))
    for k in answer["agreement"]["annotators"]:
        s.text.append(f"{k['a']} and {k['b']} on {k['ideas']} ideas: pair kappa {fmt(k['pair']['kappa'], 2)} "
                      f"({k['pair']['agree']} of {k['pair']['n']} pairs both labelled agree; "
                      f"{k['pair']['only_a'] + k['pair']['only_b']} labelled by one only); direction per pair "
                      f"{fmt(k['pair_decision']['direction']['kappa'], 2)}; idea kappa realised "
                      f"{fmt(k['idea']['realised']['kappa'], 2)}, direction {fmt(k['idea']['direction']['kappa'], 2)}.")
    s.plots.append("labels")
    s.warnings = warnings(answer)
    return s
