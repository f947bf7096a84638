"""The two worked examples of docs/prior-art.md, re-run from the shared data through the `hindsight` CLI, with their
acceptance checks.

    .venv/bin/python scripts/prior_art_examples.py paperlists [--year 2024] [--home DIR] [--json OUT]
    .venv/bin/python scripts/prior_art_examples.py ai-researcher [--home DIR] [--judge] [--json OUT]
    .venv/bin/python scripts/prior_art_examples.py draw-sheet --home DIR      # the drawn ideas' look-back candidates

`paperlists`: the shared paper lists (AISTATS 2023-2025, CoRL 2023-2025, COLT and UAI 2023-2024) in one index
built from 2022-01-01 (earlier than every scoring cutoff), and the labelled dev ideas written from YEAR's papers plus
the vague ones, scored at YEAR-01-01 (before the year) and at YEAR+1-01-01 (after it). How the checks count:

- R = the ideas realised after the cutoff when scored before the year: class `anticipated` or `recalled` there (the
  matcher's forward decision, whatever the idea's kind). Check 1: at least 90% of R are `anticipated`.
- Check 2: the same ideas R scored after the year: at least 90% are `already_published` or `recalled`, at most 5%
  `anticipated`.
- Check 3: the vague ideas: at least 95% are `unrealised` at both cutoffs (an idea counts once, and passes only when
  it is `unrealised` at each).
- Beside them, the same figures over the ideas the dev set says are realised (paraphrase and loose) whatever the
  matcher decided, and how often the realising paper is the idea's own source.

`ai-researcher`: the generators' corpus (ACL, NAACL, COLING 2022 and COLING 2025) in one index from 2022-01-01, the
213 AI-Researcher ideas scored at their knowledge cutoff 2024-05-31 (look-back window 730 days), the four class
rates per system, the correlations of "had prior art" with the judge's dimensions (`--judge` first runs the packaged
judge; else the judge scores already in the home are used), and the labelled worked example: a draw of 20 ideas
(seed 41), the COLING 2025 side labelled by the judged files and the look-back side by
data/labelled/ai_researcher_lookback2022.jsonl, then `analyze systems --labels`.

Each step is a `hindsight` command run against HOME (a fresh temporary folder unless --home; a home that already
holds an index skips ingest and build). The commands are printed as they run.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HINDSIGHT_SHARED_DATA", ROOT.parent / "shared" / "data"))
PAPERLISTS = SHARED / "paperlists"
DEV_IDEAS = SHARED / "ideas" / "dev_ideas.jsonl"
GENERATORS = SHARED / "generators"
LABELLED = ROOT / "data" / "labelled"
FORWARD_LABELS = [LABELLED / "ai_researcher_coling2025_air1.jsonl", LABELLED / "ai_researcher_coling2025_air2.jsonl"]
LOOKBACK_LABELS = LABELLED / "ai_researcher_lookback2022.jsonl"
ANNOTATOR = "reader"
DRAW_N, DRAW_SEED = 20, 41
AIR_RUN, AIR_SYSTEM, AIR_CUTOFF = "claude-2024-05", "ai-researcher", "2024-05-31"
AIS_RUN = "templates-2024"
BUILD_FROM, BUILD_UNTIL = "2022-01-01", "2025-12-31"


def hindsight(home: Path, *args: str, want_json: bool = True) -> dict | str:
    """`hindsight ARGS` against home, as a reader runs it; exits with its error when it fails."""
    cmd = [sys.executable, "-m", "service.cli", *args] + (["--json"] if want_json else [])
    print(f"$ HINDSIGHT_HOME={home} hindsight {' '.join(args)}{' --json' if want_json else ''}", file=sys.stderr)
    env = {**os.environ, "HINDSIGHT_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    print(f"  ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    if done.returncode != 0:
        sys.exit(f"hindsight {' '.join(args)} failed ({done.returncode}):\n{done.stderr.strip()}\n"
                 f"{done.stdout[-2000:]}")
    return json.loads(done.stdout) if want_json else done.stdout


def ready_home(home: Path, files: list[Path]) -> dict:
    """Ingest the files and build one index from BUILD_FROM, unless the home already has one."""
    if (home / "indexes" / "CURRENT").exists():
        status = hindsight(home, "index", "status")
        assert isinstance(status, dict)
        return {"reused": True, "status": status}
    ingest = hindsight(home, "ingest", *map(str, files))
    build = hindsight(home, "index", "build", "--cutoff", BUILD_FROM, "--until", BUILD_UNTIL)
    return {"reused": False, "ingest": ingest, "build": build}


def share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


# ---- paper lists ---------------------------------------------------------------------------------------------


def dev_ideas(year: int) -> list[dict]:
    rows = [json.loads(line) for line in DEV_IDEAS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r["kind"] == "vague" or (r["source_venue"] or "").endswith(str(year))]


def classes_of(answer: dict) -> dict[str, dict]:
    """Per idea id: its classes, its realised papers on each side and its look-back window's state."""
    out = {}
    for idea in answer["ideas"]:
        prior = idea.get("prior_art")
        if prior is None:
            sys.exit("the score answer has no prior_art block: this tree does not score the look-back side")
        out[idea["id"]] = {
            "class": prior["class_realised"], "class_direction": prior["class_direction"],
            "after": [m["paper_id"] for m in idea["matches"] if m.get("realised", m["above_threshold"])],
            "before": [m["paper_id"] for m in prior["matches"] if m["realised"]],
            "direction_after": [m["paper_id"] for m in idea["matches"] if m.get("direction")],
            "direction_before": [m["paper_id"] for m in prior["matches"] if m["direction"]]}
    return out


def paperlists_example(home: Path, year: int) -> dict:
    files = sorted(PAPERLISTS.glob("*/*.json"))
    if not files:
        sys.exit(f"no paper lists under {PAPERLISTS}; set HINDSIGHT_SHARED_DATA to the shared data folder")
    setup = ready_home(home, files)
    ideas = dev_ideas(year)
    path = home / f"dev_ideas_{year}.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "problem": r["problem"], "method": r["method"]}) + "\n"
                            for r in ideas))
    sides = {"before": f"{year}-01-01", "after": f"{year + 1}-01-01"}
    answers, got = {}, {}
    for side, cutoff in sides.items():
        answer = hindsight(home, "score", str(path), "--format", "jsonl", "--system", "dev-ideas",
                           "--run", f"{year}-{side}", "--cutoff", cutoff)
        assert isinstance(answer, dict)
        answers[side] = {k: answer.get(k) for k in ("index_version", "model", "matcher", "matcher_version",
                                                      "thresholds", "cutoff", "window", "lookback_window",
                                                      "warnings", "run_id")}
        got[side] = classes_of(answer)
    counted = count_checks(ideas, got)
    return {"example": "paperlists", "year": year, "cutoffs": sides, "setup": _setup_summary(setup),
            "answers": answers, "ideas": len(ideas), **counted}


def count_checks(ideas: list[dict], got: dict[str, dict[str, dict]]) -> dict:
    """The acceptance checks from the dev ideas (id, kind, source_paper_id) and each side's classes per idea id
    (`classes_of` of the answer scored before the year, `before`, and after it, `after`), counted as the module
    docstring says."""
    kinds = {r["id"]: r["kind"] for r in ideas}
    sources = {r["id"]: r["source_paper_id"] for r in ideas}
    table = {side: {kind: Counter(got[side][i]["class"] for i in kinds if kinds[i] == kind)
                    for kind in ("paraphrase", "loose", "hard_negative", "vague")} for side in ("before", "after")}
    realised = sorted(i for i, c in got["before"].items() if c["class"] in ("anticipated", "recalled"))
    gold = sorted(i for i in kinds if kinds[i] in ("paraphrase", "loose"))
    vague = sorted(i for i in kinds if kinds[i] == "vague")

    def over(ids: list[str]) -> dict:
        before = Counter(got["before"][i]["class"] for i in ids)
        after = Counter(got["after"][i]["class"] for i in ids)
        return {"n": len(ids), "before": dict(before), "after": dict(after),
                "anticipated_before": share(before["anticipated"], len(ids)),
                "published_or_recalled_after": share(after["already_published"] + after["recalled"], len(ids)),
                "anticipated_after": share(after["anticipated"], len(ids)),
                "source_realises_after": share(sum(sources[i] in got["before"][i]["after"] for i in ids), len(ids)),
                "source_realises_before": share(sum(sources[i] in got["after"][i]["before"] for i in ids), len(ids))}

    by_matcher, by_gold = over(realised), over(gold)
    vague_ok = [i for i in vague
                if got["before"][i]["class"] == "unrealised" and got["after"][i]["class"] == "unrealised"]
    checks = {
        "realised_anticipated_before": {"value": by_matcher["anticipated_before"], "goal": ">= 0.90"},
        "same_published_or_recalled_after": {"value": by_matcher["published_or_recalled_after"], "goal": ">= 0.90"},
        "same_anticipated_after": {"value": by_matcher["anticipated_after"], "goal": "<= 0.05"},
        "vague_unrealised_both": {"value": share(len(vague_ok), len(vague)), "goal": ">= 0.95"},
    }
    for check in checks.values():
        v, goal = check["value"], check["goal"]
        check["pass"] = v is not None and (v >= float(goal[3:]) if goal.startswith(">=") else v <= float(goal[3:]))
    return {"classes_by_kind": {s: {k: dict(v) for k, v in t.items()} for s, t in table.items()},
            "realised_by_matcher": {"ids": realised, **by_matcher}, "realised_by_dev_set": by_gold,
            "vague": {"n": len(vague), "unrealised_both": len(vague_ok),
                      "failures": {i: [got["before"][i]["class"], got["after"][i]["class"]]
                                   for i in vague if i not in vague_ok}},
            "checks": checks, "passed": all(c["pass"] for c in checks.values()),
            "per_idea": {i: {"kind": kinds[i], "source": sources[i],
                             "before": got["before"][i], "after": got["after"][i]} for i in kinds}}


def _setup_summary(setup: dict) -> dict:
    if setup["reused"]:
        manifest = setup["status"].get("manifest", setup["status"])
        return {"reused": True, "version": manifest.get("version"), "window": manifest.get("window")}
    ingest, build = setup["ingest"], setup["build"]
    files = ingest.get("files", []) if isinstance(ingest, dict) else []
    return {"reused": False, "read": sum(f.get("read", 0) for f in files),
            "inserted": sum(f.get("inserted", 0) for f in files),
            "version": build.get("version") if isinstance(build, dict) else None,
            "papers": build.get("papers") if isinstance(build, dict) else None}


# ---- AI-Researcher -------------------------------------------------------------------------------------------


def air_scored(home: Path) -> dict:
    files = [GENERATORS / "corpus" / f for f in ("acl2022.json", "naacl2022.json", "coling2022.json",
                                                 "coling2025.json")]
    if not all(f.exists() for f in files):
        sys.exit(f"the generators' corpus is missing under {GENERATORS / 'corpus'}")
    setup = ready_home(home, files)
    if not (home / "air-score.json").exists():
        answer = hindsight(home, "score", str(GENERATORS / "ai-researcher" / "experiment_plans"), "--system",
                           AIR_SYSTEM, "--run", AIR_RUN, "--knowledge-cutoff", AIR_CUTOFF)
        assert isinstance(answer, dict)
        (home / "air-score.json").write_text(json.dumps(answer))
    if not (home / "ais-score.json").exists() and (GENERATORS / "ai-scientist").is_dir():
        # a second system with an LLM judge's novelty in its own files: AI-Scientist's self-ratings (no knowledge
        # cutoff declared; scored at the same cutoff)
        answer = hindsight(home, "score", str(GENERATORS / "ai-scientist"), "--system", "ai-scientist", "--run",
                           AIS_RUN, "--cutoff", AIR_CUTOFF)
        assert isinstance(answer, dict)
        (home / "ais-score.json").write_text(json.dumps(answer))
    return setup


def draw_of(home: Path) -> list[str]:
    """The ideas of the stored draw of DRAW_N ideas (seed DRAW_SEED), made once, in draw order."""
    path = home / "draw.json"
    if not path.exists():
        drawn = hindsight(home, "label", "draw", "--run", AIR_RUN, "--n", str(DRAW_N), "--seed", str(DRAW_SEED))
        path.write_text(json.dumps(drawn))
    return [i for d in json.loads(path.read_text())["draws"] for i in d["ideas"]]


def air_example(home: Path, judge: bool) -> dict:
    setup = air_scored(home)
    answer = json.loads((home / "air-score.json").read_text())
    out: dict = {"example": "ai-researcher", "setup": _setup_summary(setup),
                 "answer": {k: answer.get(k) for k in ("index_version", "model", "revision", "matcher",
                                                       "matcher_version", "cutoff", "window", "lookback_window",
                                                       "knowledge_cutoff", "warnings")},
                 "classes": {level: dict(Counter(i["prior_art"][f"class_{level}"] for i in answer["ideas"]))
                             for level in ("realised", "direction")}}
    both = ["--run", AIR_RUN] + (["--run", AIS_RUN] if (home / "ais-score.json").exists() else [])
    out["systems"] = hindsight(home, "analyze", "systems", *both)
    if judge:
        out["judge_run"] = hindsight(home, "judge", "run", "--run", AIR_RUN)
    out["correlations"] = hindsight(home, "analyze", "correlations", *both)
    if (home / "ais-score.json").exists():
        out["direction_prior_art_vs_self_novelty"] = direction_prior_art_vs(self_novelty(), home / "ais-score.json")
    if judge:
        judged = judge_novelty(home, out["judge_run"]["judge"])  # the stored name `judge run` reports
        out["direction_prior_art_vs_judge_novelty"] = direction_prior_art_vs(judged, home / "air-score.json")
    drawn = draw_of(home)
    labelled = [json.loads(line)["idea"] for line in LOOKBACK_LABELS.read_text().splitlines() if line.strip()]
    if drawn != labelled:
        sys.exit(f"the draw (seed {DRAW_SEED}) holds other ideas than {LOOKBACK_LABELS}: "
                 f"{sorted(set(drawn) ^ set(labelled))}")
    out["draw"] = drawn
    out["label_imports"] = [hindsight(home, "label", "import", str(path), "--run", AIR_RUN, "--annotator",
                                      ANNOTATOR, "--format", "judged")
                            for path in (*FORWARD_LABELS, LOOKBACK_LABELS)
                            if not (home / f"imported-{path.name}").exists()]
    for path in (*FORWARD_LABELS, LOOKBACK_LABELS):
        (home / f"imported-{path.name}").touch()
    out["estimates"] = hindsight(home, "analyze", "systems", "--labels", "--run", AIR_RUN, "--annotator", ANNOTATOR)
    return out


def self_novelty() -> dict[str, float]:
    """AI-Scientist's own novelty rating per idea id, read by the reader `hindsight score` uses (the ratings it
    stores as judge ai-scientist-self, under the same idea ids)."""
    from service.ideas.reader import read_path

    read = read_path(GENERATORS / "ai-scientist")
    return {r.idea.id: float(r.ratings["novelty"]) for r in read.ideas if r.ratings.get("novelty") is not None}


def direction_prior_art_vs(novelty: dict[str, float], scored: Path) -> dict:
    """Spearman's rho (with its Fisher-z Bonett-Wright interval) between "had prior art at direction level" (a
    same-problem paper in the look-back window) and a judge's novelty, per idea. `analyze correlations` relates
    realised-level prior art, of which this corpus has none: this is the direction-level companion, computed here
    from the score answer and the judge's scores."""
    import numpy as np

    from service.analyses.stats import spearman

    pairs = [(float(bool(i["prior_art"]["direction_before"])), novelty[i["id"]])
             for i in json.loads(scored.read_text())["ideas"] if i["id"] in novelty]
    if len(pairs) < 4:
        return {"n": len(pairs), "rho": None}
    x, y = (np.array(v) for v in zip(*pairs))
    corr = spearman(x, y)
    if corr["rho"] is None:
        return {"n": len(x), "had_direction_prior_art": int(x.sum()), "rho": None}
    return {"n": corr["n"], "had_direction_prior_art": int(x.sum()), "rho": corr["rho"], "p": corr["p"],
            "ci": corr["ci"], "mean_novelty_with": float(y[x == 1].mean()),
            "mean_novelty_without": float(y[x == 0].mean())}


def judge_novelty(home: Path, judge: str) -> dict[str, float]:
    """The stored judge's novelty per idea of the AI-Researcher run (`hindsight judge export`)."""
    path = home / "judge-export.jsonl"
    hindsight(home, "judge", "export", "--run", AIR_RUN, "--judge", judge, "--out", str(path), want_json=False)
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["idea_id"]: float(r["novelty"]) for r in rows if r.get("novelty") is not None}


def draw_sheet(home: Path) -> dict:
    """The drawn ideas with their look-back candidates, for a reader to label (the input of the labels file)."""
    air_scored(home)
    drawn = draw_of(home)
    ideas = {i["id"]: i for i in json.loads((home / "air-score.json").read_text())["ideas"]}
    return {"draw": drawn, "lookback": {i: [{k: m[k] for k in ("paper_id", "title", "similarity", "realised",
                                                               "direction", "p_direction")}
                                            for m in ideas[i]["prior_art"]["matches"]] for i in drawn}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("example", choices=("paperlists", "ai-researcher", "draw-sheet"))
    parser.add_argument("--home", type=Path, help="HINDSIGHT_HOME to use (default: a new temporary folder)")
    parser.add_argument("--year", type=int, default=2024, help="paper lists: the year the ideas were written from")
    parser.add_argument("--judge", action="store_true", help="ai-researcher: run the packaged judge first")
    parser.add_argument("--json", type=Path, dest="json_out", help="write the figures here")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="hindsight-prior-art-"))
    home.mkdir(parents=True, exist_ok=True)
    if args.example == "paperlists":
        result = paperlists_example(home, args.year)
    elif args.example == "ai-researcher":
        result = air_example(home, args.judge)
    else:
        result = draw_sheet(home)
    result["home"] = str(home)
    text = json.dumps(result, indent=2, default=str)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    shown = ("checks", "passed", "classes_by_kind") if args.example == "paperlists" else ("classes", "draw")
    print(json.dumps({k: result[k] for k in shown if k in result}, indent=2))
    if result.get("passed") is False:
        sys.exit(1)


if __name__ == "__main__":
    main()
