"""A stored run read back says what the live answer said: per match p_method and both evidence sentences, per idea
its warnings and shape, through every read (the run's scores, its ideas as JSON and CSV, the drill-down)."""

import csv
import io
import json
import shutil
from pathlib import Path

import httpx
import pytest

from tests.factories import SAMPLE_PAPERS as PAPERS
from tests.factories import sample_version
from tests.helpers import ROOT

IDEAS = ROOT / "data" / "ideas" / "sample.jsonl"


@pytest.fixture(scope="module")
def template(tmp_path_factory, minilm) -> Path:
    """60 sample papers, one version built with the default (hybrid) matcher."""
    home = tmp_path_factory.mktemp("stored") / "home"
    sample_version(home, minilm, 60)
    return home


def ideas() -> list[dict]:
    """Ideas restating indexed papers (evidence with both sentences), sample ideas, and out-of-range inputs."""
    out = []
    for i, line in enumerate(PAPERS.read_text().splitlines()[:3]):
        p = json.loads(line)
        out.append({"id": f"paper-{i}", "problem": p["title"], "method": ". ".join(p["abstract"].split(". ")[1:])})
    sample = [json.loads(line) for line in IDEAS.read_text().splitlines()[:2]]
    out += [{"id": s["id"], "problem": s["problem"], "method": s["method"]} for s in sample]
    out += [{"id": "no-method", "problem": sample[0]["problem"]},
            {"id": "short", "problem": "Sparse experts", "method": "Route tokens."},
            {"id": "german", "problem": "Lange Dokumente passen nicht in das Kontextfenster des Sprachmodells.",
             "method": "Wir fassen jeden Abschnitt zusammen und verketten die Zusammenfassungen."},
            {"id": "text", "text": sample[1]["problem"] + " " + sample[1]["method"]}]
    return out


@pytest.mark.parametrize("matcher", ["hybrid", "dense"])
def test_a_stored_run_reads_back_as_the_live_answer(template, tmp_path, server_factory, matcher):
    home = tmp_path / "home"
    shutil.copytree(template, home)
    url = server_factory(home).url
    r = httpx.post(f"{url}/v1/score", json={"system": "s", "run": matcher, "ideas": ideas(), "matcher": matcher},
                   timeout=120)
    assert r.status_code == 200, r.text
    live = r.json()
    by_id = {i["id"]: i for i in live["ideas"]}
    assert live["matcher"] == matcher
    assert by_id["no-method"]["warnings"] and by_id["short"]["warnings"] and by_id["german"]["warnings"]
    if matcher == "hybrid":  # what the old store dropped is there to be kept
        top = by_id["paper-0"]["matches"][0]
        assert top["p_method"] is not None and top["evidence"]["problem_sentence"]
    run_id = live["run_id"]

    stored = httpx.get(f"{url}/v1/runs/{run_id}/scores").json()["scores"]
    assert [s["id"] for s in stored] == list(by_id)
    for s in stored:
        want = by_id[s["id"]]
        assert {k: s[k] for k in want} == want, s["id"]  # every field of the live idea, matches entire

    rows = httpx.get(f"{url}/v1/runs/{run_id}/ideas").json()["ideas"]
    table = list(csv.DictReader(io.StringIO(httpx.get(f"{url}/v1/runs/{run_id}/ideas?format=csv").text)))
    assert [r["idea_id"] for r in rows] == [r["idea_id"] for r in table] == list(by_id)
    for row, line in zip(rows, table):
        want = by_id[row["idea_id"]]
        best = next(m for m in want["matches"] if m["paper_id"] == row["best_paper_id"])
        assert row["warnings"] == json.loads(line["warnings"]) == want["warnings"]
        assert row["shape"] == (line["shape"] or None) == want["shape"]
        assert row["best_p_method"] == best["p_method"]
        assert (float(line["best_p_method"]) if line["best_p_method"] else None) == best["p_method"]

        detail = httpx.get(f"{url}/v1/analysis/ideas/{row['idea_pk']}").json()
        assert detail["score"]["warnings"] == want["warnings"] and detail["score"]["shape"] == want["shape"]
        assert [(m["p_method"], m["problem_sentence"], m["evidence_sentence"], m["shared_terms"])
                for m in detail["matches"]] == [
            (m["p_method"], *((m["evidence"]["problem_sentence"], m["evidence"]["sentence"],
                               m["evidence"]["shared_terms"]) if m["evidence"] else (None, None, None)))
            for m in want["matches"]]
