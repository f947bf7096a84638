"""What the report's scores were made with: runs, model and revision, matcher and its fit, index versions with this
machine's backend check, windows and cutoffs."""

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.models import System
from indexing.versions import MANIFEST, VERSION_NAME, current_version
from service.report.parts import Section, Table, fmt
from service.runs import list_runs, matcher_labels


def read_manifest(indexes_dir: Any, version: str) -> tuple[dict | None, str | None]:
    """A version's manifest as written (nothing is loaded or verified), or the sentence saying why it cannot be read."""
    if not VERSION_NAME.fullmatch(version or ""):
        return None, f"{version!r} is not an index version name"
    try:
        manifest = json.loads((indexes_dir / version / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"index version {version} is no longer on this machine"
    except (OSError, ValueError) as exc:
        return None, f"the manifest of index version {version} cannot be read ({exc.__class__.__name__})"
    return (manifest, None) if isinstance(manifest, dict) else (None, f"the manifest of {version} is not an object")


def fit_of(manifest: dict) -> dict | None:
    """The hybrid matcher's fit a version records: version, revision fitted on, when, on what."""
    entry = (manifest.get("matcher") or {}).get("hybrid")
    if not isinstance(entry, dict):
        return None
    return {"version": entry.get("version"), "fitted_on_revision": entry.get("fitted_on_revision"),
            "written": entry.get("written"), "ideas": entry.get("ideas"), "papers": entry.get("papers"),
            "folds": entry.get("folds"), "pairs_file": entry.get("pairs_file"),
            "target_false_match": entry.get("target_false_match")}


def backend_check(manifest: dict, settings: Any) -> dict:
    """This machine's verdict on the version's embedding backend, as `hindsight index status --json` gives it."""
    from indexing.embedders import check  # nothing is loaded or probed: the cached verdict only
    from indexing.embedders.runtime import manifest_backend

    return check.status(manifest["model"], manifest_backend(manifest), manifest["revision"], settings)


def index_entry(version: str, settings: Any) -> dict:
    """One index version as the report names it (the manifest's fields, the fit, the backend verdict)."""
    manifest, reason = read_manifest(settings.indexes_dir, version)
    if manifest is None:
        return {"version": version, "readable": False, "reason": reason}
    matcher = manifest.get("matcher") or {"default": "dense"}
    counts = manifest.get("counts") or {}
    return {
        "version": version, "readable": True, "created": manifest.get("created"), "model": manifest.get("model"),
        "model_id": manifest.get("model_id"), "revision": manifest.get("revision"),
        "backend": manifest.get("backend"), "theta": manifest.get("theta"),
        "window": manifest.get("window"), "index": (manifest.get("index") or {}).get("factory"),
        "papers": counts.get("indexed"), "matcher": matcher.get("default"), "matcher_warning": matcher.get("warning"),
        "fit": fit_of(manifest), "impact": (manifest.get("impact") or {}).get("formula"),
        "backend_check": backend_check(manifest, settings) if manifest.get("model") and manifest.get("revision")
        else None,
    }


def provenance(session: Session, settings: Any, *, run_ids: list[int], scoring: list[dict], score_ids: list[int],
               windows: list[dict], leak_risk: dict, prior_art_windows: list[str]) -> dict:
    """The provenance block: the runs, how their scores were made, the index versions, windows and cutoffs."""
    chosen = set(run_ids)
    runs = [r for r in list_runs(session) if not chosen or r["id"] in chosen]
    systems = sorted({r["system"] for r in runs})
    declared = {s.name: s for s in session.scalars(select(System).where(System.name.in_(systems)))}
    for r in runs:
        s = declared.get(r["system"])
        r["knowledge_cutoff"] = s.knowledge_cutoff.isoformat() if s is not None else None
        r["generator_model"] = s.model if s is not None else None
    versions = sorted({c["index_version"] for c in scoring if c.get("index_version")})
    return {
        "runs": runs, "scoring": scoring, "matchers": matcher_labels(session, score_ids),
        "indexes": [index_entry(v, settings) for v in versions],
        "current_index": current_version(settings.indexes_dir),
        "windows": windows, "cutoffs": sorted({c["cutoff"] for c in scoring}), "leak_risk": leak_risk,
        "knowledge_cutoffs": {r["system"]: r["knowledge_cutoff"] for r in runs},
        "prior_art_windows": prior_art_windows,
    }


def _verdict(check: dict | None) -> str:
    if not check:
        return "–"
    worst = check.get("worst")
    return f"{check['backend']}: {check['verdict']}" + (
        f" (worst drift {worst['drift']:.4f} at length {worst['length']}, checked {check.get('checked_at', '?')})"
        if worst else f" ({check['reason']})" if check.get("reason") else "")


def _fit(fit: dict | None) -> str:
    if not fit:
        return "none (dense matcher only)"
    folds = ", ".join(fit["folds"] or [])
    return (f"{fit['version']}, fitted {str(fit['written'] or '?')[:10]} on revision {fit['fitted_on_revision']}: "
            f"{fit['ideas']} ideas, {fit['papers']} papers" + (f", folds {folds}" if folds else ""))


def provenance_section(block: dict, selection: dict, generated: str) -> Section:
    """The provenance section: how the report's scores were made and where."""
    s = Section("provenance", "Provenance")
    runs = ", ".join(f"{r['system']}/{r['label']} (id {r['id']})" for r in block["runs"]) or "all runs"
    window = (f"; only scores whose window starts on {selection['cutoff']}" if selection["cutoff"] else "") + (
        f"; only scores whose window ends on {selection['until']}" if selection["until"] else "")
    s.text.append(f"Made {generated} from {runs}; ideas grouped per {selection['group_by']}, decision level "
                  f"{selection['level']}" + (", windows pooled" if selection["pool_windows"] else "") + f"{window}.")
    s.tables.append(Table("runs-table", "Runs", ["id", "system", "run", "ideas scored", "knowledge cutoff", "created"],
                          [[str(r["id"]), r["system"], r["label"], str(r["ideas"]), r["knowledge_cutoff"] or "none",
                            r["created"][:19]] for r in block["runs"]]))
    s.tables.append(Table("scoring-table", "Scores made with",
                          ["model", "theta", "index version", "cutoff", "window end", "top k", "ideas"],
                          [[c["model"], fmt(c["theta"], 2), c["index_version"], c["cutoff"], c["window_end"],
                            str(c["top_k"]), str(c["ideas"])] for c in block["scoring"]]))
    s.tables.append(Table("index-table", "Index versions", ["field", *(i["version"] for i in block["indexes"])], [
        [name, *(i.get("reason", "–") if not i["readable"] else value(i) for i in block["indexes"])]
        for name, value in (
            ("model", lambda i: f"{i['model']} ({i['model_id']})"), ("revision", lambda i: str(i["revision"])),
            ("embedding backend", lambda i: str(i["backend"] or "–")),
            ("backend check on this machine", lambda i: _verdict(i["backend_check"])),
            ("matcher", lambda i: str(i["matcher"]) + (f" ({i['matcher_warning']})" if i["matcher_warning"] else "")),
            ("hybrid matcher fit", lambda i: _fit(i["fit"])), ("dense theta", lambda i: fmt(i["theta"], 2)),
            ("built window", lambda i: f"{i['window']['start']}..{i['window']['end']}" if i["window"] else "–"),
            ("papers indexed", lambda i: str(i["papers"])), ("impact", lambda i: str(i["impact"])),
            ("index", lambda i: str(i["index"])), ("built", lambda i: str(i["created"])))]))
    s.text.append("Match rules: " + ("; ".join(block["matchers"]) or "–") + ". Current index: "
                  + (block["current_index"] or "none") + ".")
    s.tables.append(Table("windows-table", "Scoring windows", ["window", "ideas", "leak-risk ideas"],
                          [[w["window"], str(w["ideas"]), str(w["leak_risk_ideas"])] for w in block["windows"]]))
    cutoffs = ", ".join(f"{k} {v}" for k, v in block["knowledge_cutoffs"].items() if v) or "none declared"
    s.text.append(f"Scoring cutoffs: {', '.join(block['cutoffs']) or '–'}. Knowledge cutoffs: {cutoffs}. Prior-art "
                  f"look-back windows: {', '.join(block['prior_art_windows']) or 'none (scored without prior art)'}.")
    return s
