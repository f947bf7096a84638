"""The idea readers on files as generators write them: the shared AI-Researcher and AI-Scientist outputs, BOM and
CRLF, one-block plans, values that are not strings, files that fit no layout, refusals counted."""

import io
import json
import zipfile
from pathlib import Path

import pytest

from service.ideas import LayoutError, SourceFile, read_files, read_path, unpack
from service.ideas.text import as_text
from tests.helpers import SHARED_DATA

GENERATORS = SHARED_DATA / "generators"
PLANS = GENERATORS / "ai-researcher" / "experiment_plans"
SCIENTIST = GENERATORS / "ai-scientist"
shared = pytest.mark.skipif(not PLANS.is_dir() or not SCIENTIST.is_dir(),
                            reason="the shared generator files (../shared/data/generators) are not here")

FULL = {"Title": "Self-Check Prompting", "Problem Statement": "LLMs state false facts confidently.",
        "Motivation": "Models can verify their own claims.",
        "Proposed Method": "Ask the model to list and check claims.",
        "Step-by-Step Experiment Plan": {"Step 1: Data": "Use TruthfulQA.", "Step 2: Prompts": ["baseline", "ours"]},
        "Test Case Examples": {"Example 1": {"Input": "Q", "Output": "A"}}, "Fallback Plan": "Analyse failures."}
RAW = {"Problem": "Seed problem.", "Existing Methods": "Retrieval.", "Motivation": "Seed motivation.",
       "Proposed Method": "Seed method.", "Experiment Plan": "Seed plan."}


def plan(**blocks) -> bytes:
    return json.dumps({"topic_description": "factuality", "idea_name": "Self-Check", **blocks}, indent=4).encode()


@shared
def test_the_ai_researcher_repository_reads_its_plans_and_skips_its_literature_review():
    read = read_path(PLANS.parent)
    assert (read.read, len(read.ideas), len(read.refusals)) == (213, 213, 0)
    assert [r.idea.id for r in read.ideas] == [r.idea.id for r in read_path(PLANS).ideas]
    assert len(read.literature) == 8 and all("/lit_review/" in f for f in read.literature)
    assert len(read.notes) == 1 and "lit_review/: 8 file(s) of AI-Researcher's literature review" in read.notes[0]
    with pytest.raises(LayoutError, match="literature review.*not ideas: score its experiment_plans/"):
        read_path(PLANS.parent / "lit_review")


@shared
def test_shared_ai_researcher_plans_read_as_one_run():
    read = read_path(PLANS)
    assert (read.read, len(read.ideas), len(read.refusals), read.files) == (213, 213, 0, 213)
    assert read.formats == ["ai-researcher"] and read.mappings["ai-researcher"] == {
        "name": "proposal+plan", "block": "full_experiment_plan", "problem": ["Problem Statement"],
        "method": ["Proposed Method", "Step-by-Step Experiment Plan"]}
    topics = {r.idea.origin.topic for r in read.ideas}
    assert len(topics) == 6 and "bias_prompting_method_prompting" in topics
    first = next(r.idea for r in read.ideas if r.idea.id == "bias_prompting_method_prompting/"
                 "bias-aware_dialogue_generation")
    assert first.origin.generator == "ai-researcher" and first.origin.title.startswith("Bias-Aware Dialogue Generation")
    assert first.origin.file.endswith("bias-aware_dialogue_generation.json")
    assert first.problem.startswith("Language models used for dialogue generation")
    # the four plans whose Proposed Method is an object are read as text, not refused
    objects = [p for p in PLANS.rglob("*.json") if isinstance(json.loads(p.read_text())["full_experiment_plan"]
                                                              ["Proposed Method"], dict)]
    assert len(objects) == 4
    for path in objects:
        idea = next(r.idea for r in read.ideas if r.idea.origin.file == str(path))
        assert "{" not in idea.method and len(idea.method) > 100


@shared
def test_shared_ai_scientist_templates_read_with_their_ratings():
    read = read_path(SCIENTIST)
    assert read.read == 162 and len(read.ideas) == 162 and not read.refusals
    assert read.ignored == [str(SCIENTIST / "LICENSE")]
    # AI-Scientist reuses a Name for a different later idea: kept under a suffixed id, and said so
    assert len(read.notes) == 5 and "grokking/mutual_information_grokking#45" in read.notes[0] + read.notes[1]
    ids = [r.idea.id for r in read.ideas]
    assert len(set(ids)) == 162
    nano = next(r for r in read.ideas if r.idea.id == "nanoGPT/adaptive_block_size")
    assert nano.judge == "ai-scientist-self"
    assert nano.ratings == {"interestingness": 6.0, "feasibility": 4.0, "novelty": 4.0, "novel": 1.0}
    assert nano.idea.problem.startswith("Adaptive Block Size") and nano.idea.method.startswith("Modify the model")
    mobile = next(r for r in read.ideas if r.idea.origin.topic == "mobilenetV3")
    assert "novel" not in mobile.ratings  # absent where the novelty check was not run: not a 0


def test_bom_and_crlf_in_every_layout():
    bom = b"\xef\xbb\xbf"
    files = [
        SourceFile("plans/factuality/self_check.json", bom + plan(full_experiment_plan=FULL).replace(b"\n", b"\r\n")),
        SourceFile("runs/nano/ideas.json", bom + json.dumps([{"Name": "a", "Title": "T", "Experiment": "E",
                                                             "Interestingness": 5, "Feasibility": 6, "Novelty": 7,
                                                             "novel": False}]).encode()),
        SourceFile("mine.jsonl",
                   bom + b'{"id": "j1", "problem": "p", "method": "m"}\r\n\r\n{"id": "j2", "text": "t"}\r\n'),
    ]
    read = read_files(files)
    assert read.formats == ["ai-researcher", "ai-scientist", "jsonl"] and not read.refusals
    assert [r.idea.id for r in read.ideas] == ["factuality/self_check", "nano/a", "j1", "j2"]
    assert read.ideas[1].ratings["novel"] == 0.0


def test_one_block_plans_and_the_mappings():
    files = [SourceFile("t/raw_only.json", plan(raw_idea=RAW)),
             SourceFile("t/full_only.json", plan(full_experiment_plan=FULL)),
             SourceFile("t/bare.json", json.dumps(FULL).encode())]
    read = read_files(files, "ai-researcher")
    raw, full, bare = (r.idea for r in read.ideas)
    # the proposal's fields fall back to the seed's; the default method is the proposed method and the plan's steps
    assert (raw.problem, raw.method) == ("Seed problem.", "Seed method.\n\nSeed plan.")
    assert full.problem == FULL["Problem Statement"]
    assert full.method == (f"{FULL['Proposed Method']}\n\nStep 1: Data: Use TruthfulQA.\n"
                           "Step 2: Prompts:\n  baseline\n  ours")
    assert bare.method == full.method and bare.origin.title == "Self-Check Prompting"
    plus = read_files(files, mappings={"ai-researcher": "proposal+all"}).ideas[1].idea
    assert plus.problem == f"{FULL['Problem Statement']}\n\n{FULL['Motivation']}"
    assert plus.method.startswith(FULL["Proposed Method"]) and "Step 2: Prompts:\n  baseline\n  ours" in plus.method
    proposal = read_files(files, mappings={"ai-researcher": "proposal"}).ideas[1].idea
    assert (proposal.problem, proposal.method) == (FULL["Problem Statement"], FULL["Proposed Method"])
    seed = read_files(files, mappings={"ai-researcher": "seed"}).ideas[1].idea
    assert (seed.problem, seed.method) == (FULL["Problem Statement"], FULL["Proposed Method"])  # no seed: proposal
    seeds = read_files([SourceFile("t/ideas.json", json.dumps({"topic_description": "x", "ideas": {
        "Idea One": RAW, "Idea Two": {**RAW, "Proposed Method": ""}}}).encode())])
    assert [r.idea.id for r in seeds.ideas] == ["t/Idea One"] and seeds.refusals[0].record == "ideas.Idea Two"


def test_values_that_are_not_strings_read_as_text():
    assert as_text({"Step 1": "a", "Step 2": {"x": 1, "y": [True, None, 2.5]}}) == \
        "Step 1: a\nStep 2:\n  x: 1\n  y:\n    yes\n    2.5"
    full = {**FULL, "Proposed Method": {"Stage 1": "Extract claims.", "Stage 2": ["Verify", "Revise"]}, "Title": 7}
    idea = read_files([SourceFile("t/obj.json", plan(full_experiment_plan=full))]).ideas[0].idea
    assert idea.method.startswith("Stage 1: Extract claims.\nStage 2:\n  Verify\n  Revise\n\nStep 1: Data")
    assert idea.origin.title == "7"
    read = read_files([SourceFile("s/ideas.json", json.dumps([
        {"Name": "n1", "Title": "T", "Experiment": ["step a", "step b"], "Novelty": "8", "Feasibility": 3},
        {"Name": "n2", "Title": "T", "Experiment": "E", "Novelty": "high"},
        {"Name": "n3", "Title": "T", "Experiment": "E", "Interestingness": True},
        "not an idea"]).encode())])
    assert read.ideas[0].idea.method == "step a\nstep b"
    assert read.ideas[0].ratings == {"novelty": 8.0, "feasibility": 3.0}
    assert [(r.record, r.field) for r in read.refusals] == [("[1] n2", "Novelty"), ("[2] n3", "Interestingness"),
                                                            ("[3]", "<record>")]
    assert read.read == 4 == len(read.ideas) + len(read.refusals)


@pytest.mark.parametrize(("name", "data", "fmt", "field"), [
    ("lit_review/bias.json", b'{"topic_description": "x", "paper_bank": []}', "auto", "paper_bank"),
    ("list.json", b'[{"paper": 1}]', "auto", "Experiment"),
    ("empty.json", b"[]", "auto", "Experiment"),
    ("t/plan.json", plan(full_experiment_plan=FULL), "ai-scientist", "Experiment"),
    ("s/ideas.json", b'[{"Name": "a", "Experiment": "E"}]', "ai-researcher", "full_experiment_plan"),
    ("s/ideas.json", b'[{"Name": "a", "Experiment": "E"}]', "jsonl", "id"),
    ("notes.txt", b"just some notes\n", "auto", "<line>"),
    ("blank.json", b"  \n", "auto", "<file>"),
    ("latin1.json", '{"id": "é"}'.encode("latin-1"), "auto", "<file>"),
])
def test_a_file_that_fits_no_layout_is_refused_naming_the_field(name, data, fmt, field):
    with pytest.raises(LayoutError) as err:
        read_files([SourceFile(name, data)], fmt)
    assert err.value.file == name and err.value.field == field
    assert f"{name}: field '{field}'" in str(err.value)


def test_jsonl_refusals_are_counted_by_line():
    data = b'{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n{"id": "b"}\n{"id": 3, "text": "z"}\n[1]\n' \
           b'{"id": "c", "problem": {"x": 1}}\n{"id": "d", "method": "ok"}\n'
    read = read_files([SourceFile("ideas.jsonl", data)])
    assert read.read == 7 and [r.idea.id for r in read.ideas] == ["a", "d"]
    assert [(r.record, r.field) for r in read.refusals] == [("2", "id"), ("3", "<record>"), ("4", "id"),
                                                            ("5", "<line>"), ("6", "problem")]
    assert str(read.refusals[0]).startswith("ideas.jsonl:2: field 'id': duplicate id 'a'")


def test_a_zip_keeps_each_plans_topic(tmp_path: Path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("experiment_plans/factuality/self_check.json", plan(full_experiment_plan=FULL))
        archive.writestr("experiment_plans/math/raw.json", plan(raw_idea=RAW))
        archive.writestr("__MACOSX/experiment_plans/math/._raw.json", b"\x00\x01")
        archive.writestr("experiment_plans/README.md", b"# not ideas")
    files = unpack([SourceFile("plans.zip", buf.getvalue())], limit=10**6)
    assert [f.name for f in files] == ["plans.zip/experiment_plans/factuality/self_check.json",
                                       "plans.zip/experiment_plans/math/raw.json"]
    assert [r.idea.id for r in read_files(files).ideas] == ["factuality/self_check", "math/raw"]
    with pytest.raises(LayoutError, match="unpacks to more than 10 bytes"):
        unpack([SourceFile("plans.zip", buf.getvalue())], limit=10)
    with pytest.raises(LayoutError, match="not a zip archive"):
        unpack([SourceFile("plans.zip", b"PK nope")], limit=10)


def test_a_directory_reads_its_json_files_and_lists_the_others(tmp_path: Path):
    (tmp_path / "math").mkdir()
    (tmp_path / "math" / "a.json").write_bytes(plan(full_experiment_plan=FULL))
    (tmp_path / "math" / "notes.md").write_text("notes")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "b.json").write_text("{}")
    read = read_path(tmp_path)
    assert [r.idea.id for r in read.ideas] == ["math/a"] and read.ignored == [str(tmp_path / "math" / "notes.md")]
    (tmp_path / "empty").mkdir()
    with pytest.raises(LayoutError, match="holds no .json"):
        read_path(tmp_path / "empty")


def test_a_one_line_json_array_of_ideas_reads_as_hindsight_ideas(tmp_path):
    path = tmp_path / "ideas.json"
    path.write_text('\ufeff[{"id": "a1", "problem": "Robots miss transparent objects.", "method": "Complete depth '
                    'from RGB."}, {"id": "a2", "text": "Sparse experts for long context."}, {"id": 3, "text": "x"}]',
                    encoding="utf-8")
    read = read_path(path, "auto")
    assert [r.idea.id for r in read.ideas] == ["a1", "a2"] and read.formats == ["jsonl"]
    assert len(read.refusals) == 1 and "3" in str(read.refusals[0]) and "id" in str(read.refusals[0])
