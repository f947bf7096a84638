"""schemathesis hooks for the contract test (named by tests/schemathesis.toml).

JSON Schema says the shape of a request; a few bodies are also read by content rules it cannot say: the rows of
an uploaded file (papers, judge scores, a generator's ideas) and a benchmark's gold and prediction records. These
hooks are the generators for those rules (docs/api.md, "What the schema cannot say"): a positive case of such an
operation carries a real file of the format it names (the repository's own sample files) or a benchmark's own
records, and the ideas of a scoring request carry distinct ids (an id may appear once per request), so
"schema-valid request rejected" tests what it says. No check is relaxed and no answer is allowed: a refused
sample fails the run; negative cases are left as generated (one false positive dropped, see filter_body).
"""

import csv
import io
import json
from functools import cache
from pathlib import Path
from typing import Any

import schemathesis
from schemathesis.generation import GenerationMode

ROOT = Path(__file__).resolve().parents[2]
UPLOADS = ("/v1/papers", "/v1/judge-scores", "/v1/labels/import")
METRICS = "/v1/metrics/{benchmark}/{task}"

GROUP = {"query": {"paper_id": "q", "decision": "Accept (Oral)"}, "query_category": "oral",
         "matches": {"spotlight": {"paper_internal_id": "s", "category": "spotlight"},
                     "poster": {"paper_internal_id": "p", "category": "poster"},
                     "reject": {"paper_internal_id": "r", "category": "reject"}}}
PAIR = {"group_id": "g", "difficulty": "easy", "paper_a": {"paper_id": "1", "decision": "Reject"},
        "paper_b": {"paper_id": "2", "decision": "Accept (Oral)"}}
NOVEL = [{"id": "n1", "a": "x", "b": "y", "label": "A"}, {"id": "n2", "a": 10, "b": 11, "label": "B"}]
# (benchmark, task) -> gold, predictions, predictions_after: each task's record format (docs/metrics.md)
RECORDS: dict[tuple[str, str], tuple[list, list, list | None]] = {
    ("innoeval", "points"): ([{"paper_id": "p1", "decision": "Accept (Oral)"},
                              {"paper_id": "p2", "decision": "Reject"}],
                             [{"id": "p1", "prediction": "oral"}, {"id": "p2", "prediction": "Reject"}], None),
    ("innoeval", "groups"): ([GROUP], [{"id": "q", "best": "q", "ranking": ["q", "s", "p", "r"]}], None),
    ("innoeval", "pairs"): ([PAIR], [{"a": "1", "b": "2", "prediction": "B"}], None),
    ("siqa", "u"): ([{"id": "q1", "answer": "A", "type": "what"}, {"id": "q2", "answer": "B", "type": "how"}],
                    [{"id": "q1", "prediction": "A"}, {"id": "q2", "prediction": "(B)"}], None),
    ("siqa", "s"): ([{"id": "s1", "perception": 2}, {"id": "s2", "perception": 4}, {"id": "s3", "perception": 5}],
                    [{"id": "s1", "perception": [5, 1, 0, 0, 0]}, {"id": "s2", "perception": [0, 0, 0, 1, 0]},
                     {"id": "s3", "perception": [0, 0, 0, 0, 3]}], None),
    ("reviewmt", "review"): ([{"id": "r1", "decision": "accept", "scores": [6, 8]},
                              {"id": "r2", "decision": "reject", "scores": [3]}],
                             [{"id": "r1", "decision": "accept", "scores": [7]},
                              {"id": "r2", "decision": "reject", "scores": [4]}], None),
    ("novelty", "pairwise"): (NOVEL, [{"id": "n1", "prediction": "A"}, {"id": "n2", "prediction": "A"}], None),
    ("novelty", "pointwise"): ([{"id": 1, "label": "novel"}, {"id": 2, "label": "not novel"}],
                               [{"id": 1, "prediction": "novel"}, {"id": 2, "prediction": "novel"}], None),
    ("novelty", "audit"): (NOVEL, [{"id": "n1", "prediction": "A"}, {"id": "n2", "prediction": "B"}],
                           [{"id": "n1", "prediction": "B"}, {"id": "n2", "prediction": "B"}]),
}


def _lines(path: Path, n: int) -> str:
    return "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:n])


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@cache
def paper_files() -> dict[str, str]:
    """A small file of each ingest format (`format` -> its text; auto reads the native JSONL)."""
    fixtures = ROOT / "tests" / "fixtures"
    native = _lines(ROOT / "data" / "papers.jsonl", 3)
    return {"auto": native, "jsonl": native, "csv": _text(fixtures / "native.csv"),
            "paperlists": _text(fixtures / "iclr2024.json"),
            "openalex": _text(fixtures / "openalex.jsonl"), "s2": _text(fixtures / "s2.jsonl")}


@cache
def label_files() -> dict[str, str]:
    """A labels file of each format naming the demo's stored ideas and papers (`format` -> its text); each row names
    its run (or draw), system and annotator, so the query's are not needed."""
    idea = json.loads(_lines(ROOT / "data" / "ideas" / "rag.jsonl", 1))["id"]
    paper = json.loads(_lines(ROOT / "data" / "papers.jsonl", 1))["id"]
    labels = json.dumps({"run": "r1", "system": "rag", "idea_id": idea, "paper_id": paper, "label": "direction",
                         "annotator": "contract"}) + "\n"
    judged = json.dumps({"idea": idea, "run": "r1", "system": "rag", "annotator": "contract", "reviewed": [paper],
                         "same_problem": [paper], "same_problem_and_approach": []}) + "\n"
    # a draw's sheet as a spreadsheet saves it: the contract test draws every rag idea first (draw 1); the paper is
    # dated on the cutoff the ideas are scored at, so its side is "after"
    sheet = f"\ufeffdraw,idea_id,side,paper_id,label,annotator\r\n1,{idea},after,{paper},none,contract\r\n"
    return {"auto": labels, "labels": labels, "judged": judged, "sheet": sheet}


@cache
def judge_files() -> dict[str, str]:
    """The demo's judge scores with each row's system and run, as CSV and as JSONL (`format` -> its text)."""
    rows = list(csv.DictReader(io.StringIO((ROOT / "data" / "judge_scores.csv").read_text(encoding="utf-8"))))[:4]
    for row in rows:  # the contract test scores data/ideas/{rag,vanilla}.jsonl as run r1 of systems rag and vanilla
        row["system"], row["run"] = ("rag" if row["idea_id"].startswith("rag-") else "vanilla"), "r1"
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    as_csv = out.getvalue()
    as_jsonl = "".join(json.dumps(row) + "\n" for row in rows)
    return {"auto": as_csv, "csv": as_csv, "jsonl": as_jsonl}


@cache
def idea_files() -> dict[str, str]:
    """One ideas file of each layout POST /v1/score reads (`format` -> its text; auto reads HindSight JSONL)."""
    hindsight = _lines(ROOT / "data" / "ideas" / "sample.jsonl", 2)
    block = {"Problem Statement": "Long documents overflow the context of language models.",
             "Problem": "Long documents overflow the context of language models.",
             "Motivation": "Retrieval helps.", "Existing Methods": "Truncation.",
             "Proposed Method": "Retrieve the passages a question needs and read only those.",
             "Step-by-Step Experiment Plan": "Compare with truncation on long-document QA."}
    plan = json.dumps({"full_experiment_plan": block, "raw_idea": block})
    scientist = json.dumps([{"Name": "sparse_moe", "Title": "Sparse Mixture of Experts for Long Context",
                             "Experiment": "Route each token to two of eight experts and measure perplexity.",
                             "Interestingness": 7, "Feasibility": 6, "Novelty": 5, "novel": True}])
    return {"auto": hindsight, "jsonl": hindsight, "ai-researcher": plan, "ai-scientist": scientist}


def distinct_ids(ideas: list) -> list:
    """The ideas with each repeated id made distinct (an id may appear once per request)."""
    seen: set[str] = set()
    out = []
    for i, idea in enumerate(ideas):
        if isinstance(idea, dict) and isinstance(idea.get("id"), str):
            if idea["id"] in seen:
                idea = {**idea, "id": f"{idea['id'][:240]}~{i}"}
            seen.add(idea["id"])
        out.append(idea)
    return out


def _positive(case: Any) -> bool:
    """Whether schemathesis generated the whole case valid (a negative case is sent as generated)."""
    meta = case.meta
    return meta is not None and meta.generation.mode == GenerationMode.POSITIVE


@schemathesis.hook
def map_case(context, case):
    """A positive case of a content-read operation carries content of the format it asks for."""
    operation = context.operation
    if operation is None or not _positive(case):
        return case
    path, body, query = operation.path, case.body, case.query or {}
    if not isinstance(body, dict):
        return case
    # a new body each time: the coverage phase shares one generated body between the cases it derives from it
    # file content goes in as text, as generated parts are: schemathesis re-checks a body a hook changed against the
    # schema, and a bytes value cannot be checked, so it would relabel the case negative (an "accepted invalid" case)
    if path in UPLOADS and isinstance(body.get("file"), (str, bytes)):
        files = paper_files() if path == "/v1/papers" else label_files() if path == "/v1/labels/import" \
            else judge_files()
        case.body = {**body, "file": files[query.get("format") or "auto"]}
        if query.get("format") == "paperlists" and not query.get("venue_year"):  # the part's filename is "file"
            case.query = {**query, "venue_year": "iclr2024"}
    elif path == "/v1/score" and isinstance(body.get("files"), list) and body["files"]:
        case.body = {**body, "files": [idea_files()[body.get("format") or "auto"]]}
    elif path == "/v1/score" and isinstance(body.get("ideas"), list):
        case.body = {**body, "ideas": distinct_ids(body["ideas"])}
    elif path == METRICS:
        params = case.path_parameters or {}
        records = RECORDS.get((str(params.get("benchmark", "")).lower(), str(params.get("task", "")).lower()))
        if records is not None:
            gold, predictions, after = records
            case.body = {**body, "gold": gold, "predictions": predictions,
                         **({"predictions_after": after} if after is not None else {})}
    return case


@schemathesis.hook
def filter_body(context, body) -> bool:
    """A multipart file part is bytes on the wire whatever was generated: a `file` mutated into a number arrives as
    a file holding that number's text, which is a valid upload (and is answered 200 with its rows counted). Such
    cases are dropped instead of counted as "schema-violating request accepted"; every other negative case of the
    uploads (a missing file, a bad query parameter) still runs."""
    operation = context.operation
    if operation is None or operation.path not in UPLOADS or not isinstance(body, dict) or "file" not in body:
        return True
    return isinstance(body["file"], (str, bytes))
