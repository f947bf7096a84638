"""`analyze systems --labels` printed: the three estimates per group and measure, the differences, the matcher's
agreement with the labels and the annotators' with each other."""

from rich.table import Table

from service.cli.common import console, print_warnings
from service.report.parts import fmt


def ci(e: dict) -> str:
    """The value, and under it the interval (marked * when pseudo-observations made it)."""
    if e["value"] is None:
        return "–"
    mark = "*" if e["method"] == "pseudo_counts" else ""
    return f"{e['value']:.3f}{mark}\n[{e['ci'][0]:.3f}, {e['ci'][1]:.3f}]"


def ci_line(e: dict) -> str:
    return ci(e).replace("\n", " ")


MEASURES = {"realised_rate": "realised", "direction_rate": "direction", "mean_score": "score"}
CLASS_MEASURES = {"anticipated": "anticipated", "recalled": "recalled", "already_published": "published",
                  "unrealised": "unrealised"}
LEGEND = ("realised, direction: the rates of ideas with such a match; score: the mean HindSight score. labels: the "
          "labelled sample alone (labels_only); ppi: prediction-powered (PPI++). n labelled, N unlabelled; +n: more "
          "labels that would halve the ppi interval. *: few labels, so the value is the plain estimate and its "
          "interval adds pseudo-observations (Agresti-Min). anticipated, recalled, published (already), "
          "unrealised: the prior-art classes at the --level, from ideas labelled on both sides of the cutoff.")


def print_labelled(answer: dict, confidence: float, level: str) -> None:
    """The estimates answer as tables, then the legend, the differences and the agreement."""
    print_warnings(answer.get("warnings", []))
    pct = f"{100 * confidence:g}%"
    console.print(f"estimates from {answer['annotator']}'s labels with {pct} intervals, predictor: "
                  f"{answer['predictor']['name']}", highlight=False)
    for g in answer["groups"]:
        t = Table("measure", "matcher", "labels", "ppi", "n", "N", "+n", title=g["group"], show_edge=False)
        for m, short in MEASURES.items():
            e = g[m]
            t.add_row(short, fmt(e["matcher"]), ci(e["labels_only"]), ci(e["ppi"]), str(e["n_labelled"]),
                      str(e["n_unlabelled"]), str(e["labels_to_halve"] if e["labels_to_halve"] is not None else "–"))
        for cls, short in CLASS_MEASURES.items():  # prior-art classes at the asked level, labelled on both sides
            e = g.get("classes", {}).get(level, {}).get(cls)
            if e and e.get("labels_only") is not None:
                t.add_row(short, fmt(e["matcher"]), ci(e["labels_only"]), ci(e["ppi"]), str(e["n_labelled"]),
                          str(e["n_unlabelled"]),
                          str(e["labels_to_halve"] if e["labels_to_halve"] is not None else "–"))
        console.print(t)
    console.print(LEGEND, highlight=False)
    for d in answer["differences"]:
        for m, short in MEASURES.items():
            console.print(f"{d['a']} - {d['b']} {short}: matcher {fmt(d[m]['matcher'])}, labels "
                          f"{ci_line(d[m]['labels_only'])}, ppi {ci_line(d[m]['ppi'])}", highlight=False)
    lookback = answer["agreement"].get("lookback")
    for name, a in [("all", answer["agreement"]["overall"]), *answer["agreement"]["groups"].items(),
                    *([("look-back side", lookback)] if lookback and lookback["ideas"] else [])]:
        c = Table("who", "level", "decision", "tp", "fp", "fn", "tn", "precision", "recall", show_edge=False,
                  title=f"the matcher on the labels: {name}")
        for who in ("matcher", "verifier"):
            if not a.get(who):
                continue
            for level_ in ("pair", "idea"):
                for dec, k in a[who][level_].items():
                    c.add_row(who, level_, dec, *(str(k[x]) for x in ("tp", "fp", "fn", "tn")),
                              fmt(k["precision"], 2), fmt(k["recall"], 2))
        console.print(c)
    for k in answer["agreement"]["annotators"]:
        console.print(kappa_line(k), highlight=False)



def kappa_line(k: dict) -> str:
    """Two annotators' agreement (Cohen's kappa) on one line."""
    pair, dec = k["pair"], k["pair_decision"]
    return (f"{k['a']} vs {k['b']} on {k['ideas']} ideas: pair kappa {fmt(pair['kappa'], 2)} "
            f"({pair['agree']} of {pair['n']} pairs both labelled agree; {pair['only_a'] + pair['only_b']} labelled "
            f"by one only: {pair['only_a']} {k['a']}, {pair['only_b']} {k['b']}); per pair kappa realised "
            f"{fmt(dec['realised']['kappa'], 2)}, direction {fmt(dec['direction']['kappa'], 2)} "
            f"({dec['direction']['agree']} of {dec['direction']['n']} agree); idea kappa realised "
            f"{fmt(k['idea']['realised']['kappa'], 2)}, direction {fmt(k['idea']['direction']['kappa'], 2)}")
