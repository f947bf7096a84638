"""The `hindsight` CLI as a user runs it: ingest, index build/status/use, score with --out and --json."""

import json
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_cli

pytestmark = pytest.mark.server


def test_ingest_build_score_status_and_rollback(tmp_path: Path):
    home = tmp_path / "home"
    papers = tmp_path / "papers.jsonl"
    papers.write_text("\n".join((ROOT / "data/papers.jsonl").read_text().splitlines()[:40]) + "\n")
    out = run_cli(home, "ingest", str(papers), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["files"][0]["inserted"] == 40

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "title": "T", "publication_date": "yesterday"}\n')
    out = run_cli(home, "ingest", str(bad))
    assert out.returncode == 1 and "bad.jsonl:1: field 'publication_date'" in out.stderr

    first = run_cli(home, "index", "build", "--json")
    assert first.returncode == 0, first.stderr
    v1 = json.loads(first.stdout)["version"]
    second = json.loads(run_cli(home, "index", "build", "--json").stdout)
    assert second["manifest"]["counts"]["embedded_new"] == 0  # the cache served every vector

    ideas = tmp_path / "ideas.jsonl"
    ideas.write_text('{"id": "i1", "problem": "Long documents overflow the context window.", '
                     '"method": "Route tokens to sparse experts by position."}\n{"id": "i2", "text": "Coffee."}\n')
    result = tmp_path / "scores.jsonl"
    out = run_cli(home, "score", str(ideas), "--out", str(result), "--system", "s", "--run", "r")
    assert out.returncode == 0, out.stderr
    assert "2 ideas: mean score" in out.stderr
    lines = [json.loads(text) for text in result.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["i1", "i2"]
    for line in lines:
        assert line["index_version"] == second["version"] and line["model"] == "minilm" and line["theta"] == 0.75
        assert line["cutoff"] == "2023-06-01" and line["window"] == {"start": "2023-06-01", "end": "2025-12-31"}
        # the minilm default is the hybrid matcher: ranked by p_realised, scored over realised matches
        assert line["matcher"] == "hybrid" and line["matcher_version"].startswith("hybrid-")
        probs = [m["p_realised"] for m in line["matches"]]
        assert probs == sorted(probs, reverse=True) and len(probs) <= 20
        assert line["score"] == max((m["impact"] for m in line["matches"] if m["realised"]), default=0.0)
    dense = tmp_path / "dense.jsonl"
    assert run_cli(home, "score", str(ideas), "--out", str(dense), "--matcher", "dense").returncode == 0
    for line in (json.loads(text) for text in dense.read_text().splitlines()):
        sims = [m["similarity"] for m in line["matches"]]
        assert line["matcher"] == "dense" and sims == sorted(sims, reverse=True) and len(sims) <= 20

    status = json.loads(run_cli(home, "index", "status", "--json").stdout)
    assert status["current"] == second["version"] and set(status["versions"]) == {v1, second["version"]}
    assert run_cli(home, "index", "use", v1).returncode == 0
    assert json.loads(run_cli(home, "index", "status", "--json").stdout)["current"] == v1

    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    out = run_cli(home, "score", str(dup))
    assert out.returncode == 2 and "dup.jsonl:2: field 'id'" in out.stderr
