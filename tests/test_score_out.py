"""`hindsight score --out` writes each idea as `--json` answers it: the idea's own warnings kept beside the run's (an
idea's fields and the run's never share a name in a flat record), and the stored run reads the same."""

import json

from indexing.db import session_scope
from service.runs import find_run, run_ideas, run_scores
from service.schemas import IdeaScoreOut, ScoringContext, idea_line
from tests.factories import sample_version

OUT_OF_RANGE = [
    {"id": "no-method", "problem": "Large language models hallucinate facts when answering open-domain questions."},
    {"id": "vague", "problem": "better LLM evaluation", "method": "use a judge"},
    {"id": "german", "problem": "Lange Dokumente passen nicht in das Kontextfenster des Sprachmodells.",
     "method": "Wir fassen jeden Abschnitt zusammen und verketten die Zusammenfassungen."},
    {"id": "chinese", "problem": "大型语言模型在长文档问答中会遗漏关键信息。",
     "method": "我们先检索相关段落，再让模型逐段总结并合并答案。"},
    {"id": "long", "problem": "Retrieval for long documents. " * 3,
     "method": ("We split each document into passages, embed them with a dense encoder, and rerank the passages "
                "with a cross-encoder before the reader answers. ") * 12},
    {"id": "one-word", "text": "Transformers"},
]


def test_flat_records_keep_an_ideas_fields_and_the_runs_apart():
    shared = set(IdeaScoreOut.model_fields) & set(ScoringContext.model_fields)
    assert "warnings" in shared  # the name both carry: what idea_line must keep apart
    context = ScoringContext(model="m", model_id="m", revision="r", theta=0.5, index_version="v1", cutoff="2024-01-01",
                             window={"start": "2024-01-01", "end": "2025-01-01"}, top_k=20, impact={},
                             warnings=[{"code": "leak_risk", "message": "leak"}])
    idea = IdeaScoreOut(id="a", score=0.0, matched=False, n_matches=0, matches=[], warnings=["no method given"])
    line = idea_line(idea, context, system="s", run="r")
    assert line["warnings"] == ["no method given"]
    assert line["run_warnings"] == [{"code": "leak_risk", "message": "leak"}]
    assert line["system"] == "s" and line["index_version"] == "v1"


def test_out_file_carries_each_ideas_warnings_as_json_answers_them(settings, minilm, run_cli_here, tmp_path):
    sample_version(settings.home, minilm, 60)
    ideas = tmp_path / "ideas.jsonl"
    ideas.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in OUT_OF_RANGE), encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    # a declared knowledge cutoff after the window's start: the run carries a leak-risk warning of its own
    got = run_cli_here("score", str(ideas), "--out", str(out), "--json", "--system", "s", "--run", "r",
                       "--knowledge-cutoff", "2024-06-01", "--cutoff", "2023-01-01")
    assert got.exit_code == 0, got.output
    answer = json.loads(got.stdout)
    assert [w["code"] for w in answer["warnings"]] == ["leak_risk"]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["id"] for line in lines] == [i["id"] for i in answer["ideas"]] == [i["id"] for i in OUT_OF_RANGE]
    for line, idea in zip(lines, answer["ideas"]):
        assert idea["warnings"], idea["id"]  # every one of them is out of the matcher's range
        assert {k: line[k] for k in idea} == idea, idea["id"]  # field by field, warnings included
        assert line["run_warnings"] == answer["warnings"]
        assert {k: line[k] for k in ("system", "run", "index_version", "matcher", "cutoff")} == {
            k: answer[k] for k in ("system", "run", "index_version", "matcher", "cutoff")}
    with session_scope(settings.db_path) as session:
        run = find_run(session, "r", "s")
        stored = {s["id"]: s["warnings"] for s in run_scores(session, run)["scores"]}
        rows = {r["idea_id"]: r["warnings"] for r in run_ideas(session, run)}
    assert stored == rows == {line["id"]: line["warnings"] for line in lines}

