"""Per group, the realised rate, direction rate and mean score three ways: the matcher's figure, the labelled
sample alone, and prediction-powered (PPI++); the same for the rate of each prior-art class (labels on both sides of
the cutoff); their differences between groups; the matcher measured on the labels, on each side."""

from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from service.analyses.selection import AnalysisError, NotFound, Selection, load_ideas, number
from service.labels import agreement, ppi, sides
from service.labels.pairs import IdeaCalls, drawn_ideas, first_annotator, load_calls, load_labels, truth_of
from service.prior_art.classes import CLASSES, LEVELS, UNKNOWN

METRICS = ("realised_rate", "direction_rate", "mean_score")
CLASS_METRICS = tuple(f"{level}:{cls}" for level in LEVELS for cls in CLASSES)  # the rate of each prior-art class
PREDICTORS = ("decision", "probability", "cosine")
PREDICTOR_TEXT = {
    "decision": "the stored decision per idea (realised / any direction match; the verifier's where the run was "
                "verified), 0 or 1",
    "probability": "the highest probability among the idea's candidates (the verifier's where it read them, else the "
                   "hybrid matcher's; the cosine under the dense matcher)",
    "cosine": "the highest cosine among the idea's candidates",
}


def _predict(name: str, metric: str, calls: IdeaCalls | None, matched: bool) -> float:
    """The fixed predictor's value for one idea (mean_score always uses the stored score)."""
    if calls is None:
        return 0.0
    if metric == "mean_score":
        return float(calls.score)
    if name == "decision":
        return float(matched if metric == "realised_rate" else (calls.stored_direction or matched))
    cands = calls.candidates
    if not cands:
        return 0.0
    if name == "cosine":
        return float(max(c.similarity for c in cands))
    values = []
    for c in cands:
        ver = c.verifier_p_realised if metric == "realised_rate" else c.verifier_p_direction
        hyb = c.p_realised if metric == "realised_rate" else c.p_direction
        values.append(ver if ver is not None else hyb if hyb is not None else c.similarity)
    return float(max(values))


def outside_impacts(indexes_dir: Path | None, wanted: dict[tuple[str, str, str], set[str]]) -> dict:
    """Impact of labelled papers that are not among an idea's stored candidates, from the index version and window
    the idea was scored in: {(version, cutoff, end): {paper id: impact}}; a version that cannot be read gives none."""
    out: dict[tuple[str, str, str], dict[str, float]] = {}
    if indexes_dir is None:
        return out
    from indexing.versions import IndexDamaged, load_version  # loading a version reads its vectors: only when needed
    from indexing.windows import WindowError

    for key, papers in wanted.items():
        version, cutoff, end = key
        try:
            loaded = load_version(indexes_dir, version)
            window = loaded.resolve_window(cutoff, end)
        except (IndexDamaged, WindowError, OSError, RuntimeError):
            continue
        impacts = loaded.window_impacts(window)
        lo, hi = window.range
        found = {}
        for position in range(lo, hi):
            pid = loaded.rows[position].get("paper_id")
            if pid in papers:
                found[pid] = impacts.of(position)[1]
        out[key] = found
    return out


def _combine(parts: list[tuple[int, ppi.Estimate]], confidence: float) -> ppi.Estimate:
    """Strata estimates weighted by their sizes (a group holding several runs, each drawn on its own)."""
    if any(e.value is None or e.se is None for _, e in parts):
        return ppi.Estimate(None, None, None, None, "normal")
    if len(parts) == 1:
        return parts[0][1]
    total = sum(n for n, _ in parts)
    value = sum(n / total * float(e.value) for n, e in parts if e.value is not None)
    center = sum(n / total * float(e.middle) for n, e in parts if e.middle is not None)
    se = float(np.sqrt(sum((n / total * float(e.se)) ** 2 for n, e in parts if e.se is not None)))
    half = ppi._z(confidence) * se
    if any(e.method == "pseudo_counts" for _, e in parts):
        return ppi.Estimate(value, [center - half, center + half], se, None, "pseudo_counts", center)
    return ppi.Estimate(value, [value - half, value + half], se, None, "normal")


def _estimate(strata: list[dict], metric: str, confidence: float) -> dict:
    """labels_only and ppi of one metric over a group's strata, with the small-sample check and the labels that
    would halve the ppi interval."""
    lab_parts, ppi_parts, checks = [], [], []
    ys, fs = [], []
    n_lab = n_unl = 0
    for s in strata:
        y, f, fu = s["y"][metric], s["f"][metric], s["fu"][metric]
        n_lab, n_unl = n_lab + len(y), n_unl + len(fu)
        size = len(y) + len(fu)
        check_lab = ppi.small_sample(y)
        check_ppi = ppi.small_sample(y, f if metric != "mean_score" else np.asarray(f) > 0)
        checks.append(check_ppi)
        pseudo_lab = ppi.PSEUDO_WEIGHT if check_lab["small"] else 0.0
        pseudo_ppi = ppi.PSEUDO_WEIGHT if check_ppi["small"] else 0.0
        lab_parts.append((size, ppi.ppi_mean(y, f, fu, lam=0.0, confidence=confidence, pseudo=pseudo_lab)))
        ppi_parts.append((size, ppi.ppi_mean(y, f, fu, confidence=confidence, pseudo=pseudo_ppi)))
        ys += list(y)
        fs += list(f)
    # every metric lies in [0, 1]: a rate, or a score max(h) with h = 0.6 c_hat + 0.4 v
    labels_only = ppi.clipped(_combine(lab_parts, confidence), 0.0, 1.0)
    powered = ppi.clipped(_combine(ppi_parts, confidence), 0.0, 1.0)
    rho2 = 0.0
    if len(ys) > 2 and np.std(ys) > 0 and np.std(fs) > 0:
        rho2 = float(np.corrcoef(ys, fs)[0, 1] ** 2)
    small = any(c["small"] for c in checks)
    out: dict[str, Any] = {
        "labels_only": labels_only.as_dict(), "ppi": powered.as_dict(),
        "n_labelled": n_lab, "n_unlabelled": n_unl,
        "lambda": [e.lam for _, e in ppi_parts],
        "small_sample": {"small": small, "strata": checks},
        "predictor_r2": number(rho2),
        "labels_to_halve": ppi.labels_to_halve(n_lab, n_unl, rho2) if n_lab else None,
    }
    return out


def _add_classes(y: dict[str, list[float]], f: dict[str, list[float]], fu: dict[str, list[float]],
                 stored: dict[str, str] | None, *, drawn: bool, after: dict | None, before: dict | None) -> None:
    """One idea's class indicators: the stored class as the predictor, the labelled class as the truth when the
    idea is drawn and labelled on both sides. An idea whose class is unknown (no look-back side) is in no class
    rate."""
    if stored is None or stored["realised"] == UNKNOWN:
        return
    truth = sides.labelled_classes(after, before) if drawn and after and before else None
    for level in LEVELS:
        for cls in CLASSES:
            key = f"{level}:{cls}"
            called = float(stored[level] == cls)
            if truth is None:
                fu[key].append(called)
            else:
                y[key].append(float(truth[level] == cls))
                f[key].append(called)


def _class_estimates(strata: list[dict], part, classes: dict[int, dict[str, str]], confidence: float) -> dict:
    """Per level and class: the matcher's rate over the group's ideas of known class, labels_only and ppi (the
    predictor is the stored class, whatever --predictor says); ideas of unknown class counted apart."""
    pks = [int(p) for p in part["idea_pk"]]
    known = [classes[p] for p in pks if p in classes and classes[p]["realised"] != UNKNOWN]
    out: dict[str, Any] = {"known": len(known), "unknown": sum(p in classes for p in pks) - len(known),
                           "not_scored_with_prior_art": sum(p not in classes for p in pks),
                           "predictor": "the stored class (0 or 1 per class)"}
    for level in LEVELS:
        out[level] = {}
        for cls in CLASSES:
            est = _estimate(strata, f"{level}:{cls}", confidence) if known else None
            out[level][cls] = {"matcher": number(np.mean([k[level] == cls for k in known])) if known else None,
                               **(est or {"labels_only": None, "ppi": None, "n_labelled": 0})}
    return out


def _difference(a: dict, b: dict, metric: str, confidence: float) -> dict:
    out: dict[str, Any] = {"matcher": number(a[metric]["matcher"] - b[metric]["matcher"])
                           if a[metric]["matcher"] is not None and b[metric]["matcher"] is not None else None}
    for kind in ("labels_only", "ppi"):
        ea, eb = (ppi.Estimate(g[metric][kind]["value"], g[metric][kind]["ci"], g[metric][kind]["se"], None,
                               g[metric][kind]["method"], g[metric][kind]["ci_center"]) for g in (a, b))
        out[kind] = ppi.clipped(ppi.difference(ea, eb, confidence=confidence), -1.0, 1.0).as_dict()
    return out


def labelled_summary(session: Session, *, selection: Selection, confidence: float = 0.95,
                     predictor: str = "decision", annotator: str | None = None, shown: int = 5,
                     indexes_dir: Path | None = None,
                     impacts: Callable[[dict], dict] | None = None) -> dict:
    """Per group: matcher, labels_only and ppi of each metric from the chosen annotator's labels of drawn ideas;
    the differences between groups; the agreement of the matcher (and verifier) with the labels."""
    if predictor not in PREDICTORS:
        raise AnalysisError("predictor", f"expected one of {', '.join(PREDICTORS)}, got {predictor!r}")
    if not 0.5 <= confidence < 1:
        raise AnalysisError("confidence", f"expected a level in [0.5, 1), got {confidence}")
    ideas = load_ideas(session, selection)
    pks = [int(p) for p in ideas["idea_pk"]]
    calls = load_calls(session, pks)
    labels = load_labels(session, pks)
    drawn = drawn_ideas(session, pks)
    chosen = annotator or first_annotator(labels, set(drawn)) or first_annotator(labels, set(pks))
    if annotator is not None and annotator not in labels:
        raise NotFound("annotator", f"{annotator!r} labelled none of the selected ideas"
                                         + (f"; present: {', '.join(sorted(labels))}" if labels else ""))
    mine = labels.get(chosen, {}) if chosen else {}
    # the forward rates read the labels on papers from the cutoff on; the classes need both sides labelled
    by_side = sides.split_all(session, mine, calls)
    forward, before = by_side[sides.AFTER], by_side[sides.BEFORE]
    classes = sides.stored_classes(session, pks)
    wanted: dict[tuple[str, str, str], set[str]] = {}
    for pk, papers in forward.items():
        c = calls.get(pk)
        stored = {x.paper_id for x in c.candidates} if c else set()
        for paper, (lab, _) in papers.items():
            if lab == "realised" and paper not in stored and c is not None and c.version is not None:
                wanted.setdefault(c.version, set()).add(paper)
    found = (impacts or (lambda w: outside_impacts(indexes_dir, w)))(wanted) if wanted else {}
    warnings: list[dict] = []
    groups, unknown_impact = [], 0
    for name, part in ideas.groupby("group", sort=True):
        strata = []
        for run_id, stratum in part.groupby("run_id", sort=True):
            y: dict[str, list[float]] = {m: [] for m in (*METRICS, *CLASS_METRICS)}
            f: dict[str, list[float]] = {m: [] for m in (*METRICS, *CLASS_METRICS)}
            fu: dict[str, list[float]] = {m: [] for m in (*METRICS, *CLASS_METRICS)}
            outside = drawn_unlabelled = 0
            for pk, matched in zip(stratum["idea_pk"], stratum["matched"]):
                pk = int(pk)
                c = calls.get(pk)
                values = {m: _predict(predictor, m, c, bool(matched)) for m in METRICS}
                _add_classes(y, f, fu, classes.get(pk), drawn=pk in drawn, after=forward.get(pk),
                             before=before.get(pk))
                in_sample = pk in drawn and pk in forward
                if pk in mine and pk not in drawn:
                    outside += 1
                if pk in drawn and pk not in mine:
                    drawn_unlabelled += 1
                if not in_sample:
                    for m in METRICS:
                        fu[m].append(values[m])
                    continue
                realised, direction, score = truth_of(forward[pk], c, found.get(c.version, {}) if c and c.version
                                                      else {})
                for m, truth in (("realised_rate", float(realised)), ("direction_rate", float(direction))):
                    y[m].append(truth)
                    f[m].append(values[m])
                if score is None:  # a realised paper whose impact no version here can say: not a zero
                    unknown_impact += 1
                    fu["mean_score"].append(values["mean_score"])
                else:
                    y["mean_score"].append(score)
                    f["mean_score"].append(values["mean_score"])
            strata.append({"run_id": int(run_id), "ideas": len(stratum), "y": y, "f": f, "fu": fu,
                           "labelled_outside_draws": outside, "drawn_unlabelled": drawn_unlabelled})
        matcher = {"realised_rate": number(part["matched"].mean()),
                   "direction_rate": number(np.mean([_predict("decision", "direction_rate", calls.get(int(p)),
                                                              bool(m)) for p, m in zip(part["idea_pk"],
                                                                                       part["matched"])])),
                   "mean_score": number(part["score"].mean())}
        g: dict[str, Any] = {"group": name, "system": part["system"].iloc[0], "run_ids": [s["run_id"] for s in strata],
                             "ideas": int(len(part)),
                             "drawn": sum(int(pk) in drawn for pk in part["idea_pk"]),
                             "labelled_outside_draws": sum(s["labelled_outside_draws"] for s in strata),
                             "drawn_unlabelled": sum(s["drawn_unlabelled"] for s in strata)}
        for m in METRICS:
            g[m] = {"matcher": matcher[m], **_estimate(strata, m, confidence)}
            g[m]["predictor"] = "the stored score" if m == "mean_score" else predictor
            if g[m]["n_labelled"] == 0:
                warnings.append({"code": "no_labels", "message": f"{name}: no labelled drawn idea, so no estimate "
                                                                 f"of {m} from labels"})
            elif g[m]["small_sample"]["small"]:
                warnings.append({"code": "small_sample", "message": (
                    f"{name} {m}: few labelled positives, negatives or predictor misses (under "
                    f"{ppi.SMALL_COUNT}): a normal interval would be too narrow, so its intervals add "
                    "pseudo-observations (Agresti-Min, one pseudo-success and one pseudo-failure)")})
        if g["labelled_outside_draws"]:
            warnings.append({"code": "outside_draws", "message": (
                f"{name}: {g['labelled_outside_draws']} labelled ideas are in no draw: kept, counted in the "
                "agreement, left out of the estimates (they were not picked at random)")})
        g["classes"] = _class_estimates(strata, part, classes, confidence)
        groups.append(g)
    if unknown_impact:
        warnings.append({"code": "unknown_impact", "message": (
            f"{unknown_impact} labelled ideas have a paper labelled realised that is not among their candidates and "
            "whose impact no loadable index version gives: left out of mean_score's labelled sample (their "
            "predictions count as unlabelled)")})
    differences = []
    for a, b in combinations(groups, 2):
        differences.append({"a": a["group"], "b": b["group"],
                            **{m: _difference(a, b, m, confidence) for m in METRICS},
                            "classes": {level: {cls: _difference(a["classes"][level], b["classes"][level], cls,
                                                                 confidence)
                                                    if a["classes"][level][cls]["labels_only"] is not None
                                                    and b["classes"][level][cls]["labels_only"] is not None else None
                                                    for cls in CLASSES}
                                        for level in LEVELS}})
    labelled_all = dict(forward)
    by_group = {}
    for name, part in ideas.groupby("group", sort=True):
        members = {int(p) for p in part["idea_pk"]}
        by_group[name] = agreement.measure({pk: v for pk, v in labelled_all.items() if pk in members}, calls,
                                           shown=shown)
    return {
        "selection": selection.as_dict(), "confidence": confidence,
        "annotator": chosen, "annotator_rule": "given" if annotator else "first to label (earliest label time)",
        "annotators": sorted(labels),
        "predictor": {"name": predictor, "text": PREDICTOR_TEXT[predictor], "chosen": "fixed in advance"},
        "groups": groups, "differences": differences,
        "agreement": {"annotator": chosen, "overall": agreement.measure(labelled_all, calls, shown=shown),
                      "groups": by_group, "annotators": agreement.annotators(labels, calls, shown=shown),
                      "lookback": agreement.measure(before, sides.load_lookback_calls(session, list(before)),
                                                    shown=shown)},
        "warnings": warnings,
    }
