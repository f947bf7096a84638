"""The matcher and the verifier measured on people's labels (confusion counts, precision, recall at pair and idea
level), and two annotators' agreement with each other (Cohen's kappa)."""

from typing import Any

import numpy as np
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from service.labels.pairs import IdeaCalls

DECISIONS = ("realised", "direction")


def confusion(truth: list[bool], called: list[bool]) -> dict[str, Any]:
    """tp, fp, fn, tn with precision and recall (None when undefined) of calls against the labels."""
    if truth:
        tn, fp, fn, tp = (int(v) for v in confusion_matrix(truth, called, labels=[False, True]).ravel())
    else:
        tn = fp = fn = tp = 0
    return {"n": tp + fp + fn + tn, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / (tp + fn) if tp + fn else None}


def pair_set(labels: dict[str, tuple[str, Any]], calls: IdeaCalls | None, shown: int) -> dict[str, str]:
    """The pairs a labelled idea is judged on: every labelled paper, and its first `shown` candidates (those
    without a label count as `none`)."""
    out = {p: lab for p, (lab, _) in labels.items()}
    for c in (calls.candidates if calls else [])[:shown]:
        out.setdefault(c.paper_id, "none")
    return out


def _truth(label: str, decision: str) -> bool:
    return label == "realised" if decision == "realised" else label in ("realised", "direction")


def measure(ideas: dict[int, dict[str, tuple[str, Any]]], calls: dict[int, IdeaCalls], *, shown: int) -> dict:
    """Pair and idea level confusion of the matcher (and of the verifier on the ideas it read) against labels.
    A labelled paper outside the idea's candidates is the matcher's "no"; a matcher's call on a candidate past the
    first `shown` that nobody labelled is not counted but reported (`unlabelled_calls`)."""
    out: dict[str, Any] = {"ideas": len(ideas), "shown": shown}
    for who in ("matcher", "verifier"):
        pair: dict[str, tuple[list[bool], list[bool]]] = {d: ([], []) for d in DECISIONS}
        idea: dict[str, tuple[list[bool], list[bool]]] = {d: ([], []) for d in DECISIONS}
        unlabelled = dict.fromkeys(DECISIONS, 0)
        read = 0
        for pk, labels in ideas.items():
            c = calls.get(pk)
            if who == "verifier" and not (c and c.verified):
                continue
            read += 1
            by_paper = {x.paper_id: x for x in (c.candidates if c else [])}
            pairs = pair_set(labels, c, shown)
            for d in DECISIONS:
                def called(paper: str) -> bool:
                    x = by_paper.get(paper)
                    if x is None:
                        return False
                    if who == "matcher":
                        return x.matcher_realised if d == "realised" else x.matcher_direction
                    value = x.verifier_realised if d == "realised" else x.verifier_direction
                    return bool(value)
                for paper, lab in pairs.items():
                    pair[d][0].append(_truth(lab, d))
                    pair[d][1].append(called(paper))
                unlabelled[d] += sum(called(x.paper_id) for x in by_paper.values() if x.paper_id not in pairs)
                idea[d][0].append(any(_truth(lab, d) for lab in pairs.values()))
                idea[d][1].append(any(called(p) for p in by_paper))
        if who == "verifier" and read == 0:
            out[who] = None
            continue
        out[who] = {"ideas": read,
                    "pair": {d: confusion(*pair[d]) for d in DECISIONS},
                    "idea": {d: confusion(*idea[d]) for d in DECISIONS},
                    "unlabelled_calls": unlabelled}
    return out


def kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's kappa of two label lists; None when it is undefined (fewer than two items, or one category)."""
    if len(a) < 2 or len(set(a) | set(b)) < 2:
        return None
    value = float(cohen_kappa_score(a, b))
    return value if np.isfinite(value) else None


def _agreement(a: list[str], b: list[str]) -> dict[str, Any]:
    return {"n": len(a), "agree": sum(x == y for x, y in zip(a, b)), "kappa": kappa(a, b)}


def annotators(labels: dict[str, dict[int, dict[str, tuple[str, Any]]]], calls: dict[int, IdeaCalls], *,
               shown: int) -> list[dict]:
    """Every two annotators over the ideas both labelled: raw agreement and Cohen's kappa over the pairs **both**
    gave a label (an explicit `none` included; a pair only one of them labelled, e.g. a candidate past the other's
    sheet, is counted in `only_a` / `only_b`, never as the other's `none`). `pair`: the three labels per pair;
    `pair_decision`: each decision per pair (realised or not, direction or not); `idea`: each decision per idea,
    whether the idea has such a pair among the pairs both labelled (ideas without a pair both labelled are left
    out). `shown` is kept for the callers: what an annotator was shown is what they labelled."""
    del calls, shown
    names = sorted(labels)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = sorted(set(labels[a]) & set(labels[b]))
            la: list[str] = []
            lb: list[str] = []
            only_a = only_b = 0
            per_idea: dict[str, tuple[list[str], list[str]]] = {d: ([], []) for d in DECISIONS}
            for pk in both:
                pa = {p: lab for p, (lab, _) in labels[a][pk].items()}
                pb = {p: lab for p, (lab, _) in labels[b][pk].items()}
                common = sorted(set(pa) & set(pb))
                only_a += len(set(pa) - set(pb))
                only_b += len(set(pb) - set(pa))
                la += [pa[p] for p in common]
                lb += [pb[p] for p in common]
                if not common:
                    continue
                for d in DECISIONS:
                    per_idea[d][0].append(str(any(_truth(pa[p], d) for p in common)))
                    per_idea[d][1].append(str(any(_truth(pb[p], d) for p in common)))
            out.append({
                "a": a, "b": b, "ideas": len(both),
                "pair": {**_agreement(la, lb), "only_a": only_a, "only_b": only_b},
                "pair_decision": {d: _agreement([str(_truth(x, d)) for x in la], [str(_truth(x, d)) for x in lb])
                                  for d in DECISIONS},
                "idea": {d: _agreement(*per_idea[d]) for d in DECISIONS}})
    return out
