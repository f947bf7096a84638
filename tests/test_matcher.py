"""The hybrid matcher through the real server: dense answers unchanged, hybrid answers explained and stored, hostile
ideas scored or refused with a 422, versions without a lexical index still serving."""

import json
import shutil
from datetime import date
from pathlib import Path

import httpx
import orjson
import pytest

from indexing.build import build_index, matcher_manifest
from indexing.embedders import join
from indexing.matcher import default_matcher
from indexing.settings import Settings
from indexing.versions import MANIFEST, current_version, load_version, set_current, sha256_file
from tests.factories import SAMPLE_PAPERS as PAPERS
from tests.factories import sample_version
from tests.helpers import ROOT

IDEAS = ROOT / "data" / "ideas" / "sample.jsonl"
WINDOW = {"cutoff": date(2000, 1, 1), "until": date(2100, 12, 31)}


@pytest.fixture(scope="module")
def template(tmp_path_factory, minilm) -> Path:
    """80 sample papers, one version built with the default (hybrid) matcher."""
    home = tmp_path_factory.mktemp("matcher") / "home"
    sample_version(home, minilm, 80)
    return home


@pytest.fixture
def home(template, tmp_path) -> Path:
    dest = tmp_path / "home"
    shutil.copytree(template, dest)
    return dest


def sample_ideas(n: int = 8) -> list[dict]:
    return [json.loads(line) for line in IDEAS.read_text().splitlines()[:n]]


def paper_idea(n: int = 3) -> list[tuple[dict, str]]:
    """Ideas restating indexed papers: the title as the problem, the abstract's later sentences as the method."""
    out = []
    for i, line in enumerate(PAPERS.read_text().splitlines()[:n]):
        p = json.loads(line)
        sentences = p["abstract"].split(". ")
        out.append(({"id": f"p{i}", "problem": p["title"], "method": ". ".join(sentences[1:])}, p["id"]))
    return out


def old_rule(home: Path, minilm, ideas: list[dict], top_k: int = 20) -> list[dict]:
    """Scoring as it was before the hybrid matcher: embed problem [SEP] method, top-k, cosine >= theta."""
    loaded = load_version(home / "indexes", current_version(home / "indexes"))
    texts = [i["text"].strip() if i.get("text") else join(minilm, i.get("problem") or "", i.get("method"))
             for i in ideas]
    theta = loaded.manifest["theta"]
    out = []
    for hits in loaded.search(minilm.encode(texts), top_k):
        matches = [{"paper_id": p["paper_id"], "similarity": round(s, 6), "impact": p["impact"],
                    "above_threshold": s >= theta} for p, s in hits]
        out.append({"score": max((m["impact"] for m in matches if m["above_threshold"]), default=0.0),
                    "matches": matches})
    return out


def score(url: str, ideas: list[dict], **extra) -> httpx.Response:
    return httpx.post(f"{url}/v1/score", json={"system": "t", "ideas": ideas, **extra}, timeout=120)


def test_dense_matcher_gives_the_old_answers(home, minilm, server_factory):
    ideas = sample_ideas()
    expected = old_rule(home, minilm, ideas)
    server = server_factory(home)
    got = score(server.url, ideas, matcher="dense", run="dense").json()
    assert got["matcher"] == "dense" and got["thresholds"] == {"theta": 0.75} and got["theta"] == 0.75
    for want, idea in zip(expected, got["ideas"]):
        assert idea["score"] == want["score"]
        assert [{k: m[k] for k in ("paper_id", "impact", "above_threshold")} for m in idea["matches"]] == [
            {k: m[k] for k in ("paper_id", "impact", "above_threshold")} for m in want["matches"]]
        # the server encodes each facet at its own length on one thread, this test one padded batch on every core:
        # the same vectors to float rounding, which can move the sixth decimal
        assert [m["similarity"] for m in idea["matches"]] == pytest.approx(
            [m["similarity"] for m in want["matches"]], abs=2e-6)
        assert all(m["p_realised"] is None and m["evidence"] is None for m in idea["matches"])

    # a version built with --matcher dense answers the same without being asked
    settings = Settings(home=home)
    build_index(settings, embedder=minilm, matcher="dense", **WINDOW)
    by_default = score(server.url, ideas, run="dense-build").json()
    assert by_default["matcher"] == "dense" and by_default["index_version"] != got["index_version"]
    assert [i["score"] for i in by_default["ideas"]] == [w["score"] for w in expected]
    for i, w in zip(by_default["ideas"], expected):
        assert [m["similarity"] for m in i["matches"]] == pytest.approx([m["similarity"] for m in w["matches"]],
                                                                         abs=2e-6)


def test_hybrid_answers_explain_each_match_and_are_stored(home, server_factory):
    server = server_factory(home)
    ideas = [i for i, _ in paper_idea()] + sample_ideas(3) + [{"id": "txt", "text": sample_ideas(1)[0]["problem"]}]
    r = score(server.url, ideas, run="hybrid")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["matcher"] == "hybrid" and body["matcher_version"].startswith("hybrid-")
    assert set(body["thresholds"]) == {"direction", "method"}
    for idea in body["ideas"]:
        assert idea["shape"] == ("text" if idea["id"] == "txt" else "facets")
        probs = [m["p_realised"] for m in idea["matches"]]
        assert probs == sorted(probs, reverse=True) and len(probs) <= 20
        t = {k: v[idea["shape"]] for k, v in body["thresholds"].items()}
        for m in idea["matches"]:
            assert 0 <= m["p_realised"] <= 1 and 0 <= m["p_direction"] <= 1 and 0 <= m["p_method"] <= 1
            assert m["p_realised"] == pytest.approx(m["p_direction"] * m["p_method"], abs=2e-6)
            # realised = same problem AND same method on this paper, so it implies direction
            assert m["realised"] == (m["p_direction"] >= t["direction"] and m["p_method"] >= t["method"]) \
                == m["above_threshold"]
            assert m["direction"] == (m["p_direction"] >= t["direction"])
            assert isinstance(m["evidence"]["shared_terms"], list)
        assert idea["n_matches"] == sum(m["realised"] for m in idea["matches"])
        assert idea["n_direction_matches"] == sum(m["direction"] for m in idea["matches"])
        assert idea["score"] == max((m["impact"] for m in idea["matches"] if m["realised"]), default=0.0)
        assert idea["direction_score"] == max((m["impact"] for m in idea["matches"] if m["direction"]), default=0.0)
        assert idea["direction_score"] >= idea["score"]
    # an idea restating a paper finds it first, realised, with the abstract sentence and shared words as evidence
    for (idea, source), got in zip(paper_idea(), body["ideas"]):
        top = got["matches"][0]
        assert top["paper_id"] == source and top["realised"], (idea["id"], top)
        assert top["evidence"]["sentence"] and top["evidence"]["shared_terms"] and top["evidence"]["problem_sentence"]

    stored = httpx.get(f"{server.url}/v1/runs/{body['run_id']}/scores").json()["scores"]
    assert [s["id"] for s in stored] == [i["id"] for i in body["ideas"]]
    for s, idea in zip(stored, body["ideas"]):
        assert s["matcher"] == "hybrid" and s["matcher_version"] == body["matcher_version"]
        assert s["direction_score"] == idea["direction_score"]
        assert s["n_direction_matches"] == idea["n_direction_matches"]
        assert s["warnings"] == idea["warnings"] and s["shape"] == idea["shape"]
        live = [(m["p_realised"], m["p_method"], m["realised"], m["direction"], m["evidence"]) for m in idea["matches"]]
        assert [(m["p_realised"], m["p_method"], m["realised"], m["direction"], m["evidence"])
                for m in s["matches"]] == live


def test_hostile_ideas_get_a_score_or_a_clear_422(home, server_factory):
    server = server_factory(home)
    word = "learning " * (20_000 // 9)
    scored = [{"id": "empty-problem", "problem": "", "method": "Route tokens to sparse experts."},
              {"id": "empty-method", "problem": "Long documents overflow the context.", "method": "   "},
              {"id": "stop-words", "problem": "the of and to in", "method": "is it was with the"},
              {"id": "one-word", "problem": word[:20_000], "method": word[:20_000]},
              {"id": "one-word-text", "text": word[:20_000]},
              {"id": "punctuation", "problem": "?!", "method": "..."}]
    for matcher in ("hybrid", "dense"):
        r = score(server.url, scored, matcher=matcher, run=f"hostile-{matcher}")
        assert r.status_code == 200, r.text
        for idea in r.json()["ideas"]:
            assert 0.0 <= idea["score"] <= 1.0
    got = {i["id"]: i for i in score(server.url, scored, run="hostile").json()["ideas"]}
    assert got["empty-problem"]["shape"] == "text" and got["empty-method"]["shape"] == "text"
    # a one-facet or a wordless idea is warned about and judged for direction only
    assert "no problem given" in got["empty-problem"]["warnings"]
    assert "no method given" in got["empty-method"]["warnings"]
    for name in ("empty-problem", "empty-method", "stop-words", "punctuation"):
        assert got[name]["n_matches"] == 0 and "direction only" in got[name]["warnings"][-1], got[name]
    assert any("past the embedder's 256" in w for w in got["one-word"]["warnings"])
    assert got["one-word"]["n_matches"] == 0 and got["stop-words"]["n_matches"] == 0  # no evidence, no match
    for bad in ([{"id": "x", "problem": "", "method": ""}], [{"id": "x", "problem": "a" * 20_001, "method": "m"}]):
        r = score(server.url, bad)
        assert r.status_code == 422 and "Traceback" not in r.text, r.text
    r = score(server.url, sample_ideas(1), matcher="cosine")
    assert r.status_code == 422 and "matcher" in r.text


def strip_lexical(folder: Path) -> None:
    """Make a version look like one built before the lexical index existed."""
    manifest = orjson.loads((folder / MANIFEST).read_bytes())
    for name in manifest["lexical"]["files"]:
        (folder / name).unlink()
        manifest["checksums"].pop(name)
    manifest.pop("lexical")
    manifest.pop("matcher")
    (folder / MANIFEST).write_bytes(orjson.dumps(manifest))


def test_version_without_lexical_index_serves_dense(home, minilm, server_factory):
    indexes = home / "indexes"
    good = current_version(indexes)
    shutil.copytree(indexes / good, indexes / "v0100")
    manifest = orjson.loads((indexes / "v0100" / MANIFEST).read_bytes())
    manifest["version"] = "v0100"
    (indexes / "v0100" / MANIFEST).write_bytes(orjson.dumps(manifest))
    strip_lexical(indexes / "v0100")
    set_current(indexes, "v0100")
    assert load_version(indexes, "v0100").lexical is None
    ideas = sample_ideas(4)
    expected = old_rule(home, minilm, ideas)
    server = server_factory(home)
    r = score(server.url, ideas)
    assert r.status_code == 200 and r.json()["index_version"] == "v0100" and r.json()["matcher"] == "dense"
    assert [i["score"] for i in r.json()["ideas"]] == [w["score"] for w in expected]
    r = score(server.url, ideas, matcher="hybrid")
    assert r.status_code == 409 and "no lexical index" in r.json()["detail"], r.text


def test_lexical_documents_follow_the_snapshot_order(template):
    loaded = load_version(template / "indexes", current_version(template / "indexes"))
    rows = list(loaded.papers.values())
    assert loaded.lexical.n_docs == len(rows) == len(loaded.lexical.abstracts)
    for i in (0, len(rows) // 2, len(rows) - 1):
        hits = loaded.lexical.search(rows[i]["title"], 1)
        assert hits and hits[0][0] == i, (i, rows[i]["title"], hits)
    # a position range restricts the search to those snapshot entries
    lo, hi = 10, 20
    hits = loaded.lexical.search(rows[5]["title"], 50, allowed=(lo, hi))
    assert hits and all(lo <= p < hi for p, _ in hits)
    assert all(sha256_file(template / "indexes" / loaded.version / n) == loaded.manifest["checksums"][n]
               for n in loaded.manifest["lexical"]["files"])


def test_defaults_per_model(settings, minilm):
    assert default_matcher("minilm") == "hybrid" and default_matcher("specter2") == "dense"

    class Specter2Like:
        key, revision, theta = "specter2", "r", 0.96

    block = matcher_manifest(settings, Specter2Like(), None)
    assert block["default"] == "dense" and block["dense"]["theta"] == 0.96 and block["hybrid"] is None
    # the shipped fits are bf16's and the default backend's (static int8); the fp32 torch backend has none, uses the
    # newest (static int8's) and the manifest says so
    block = matcher_manifest(settings, minilm, None)
    assert block["default"] == "hybrid"
    assert block["hybrid"]["fitted_on_revision"] == minilm.revision + "-openvino-int8-static-f32"
    assert "fitted on revision" in block["warning"]

    class Bf16Like:
        key, revision, theta = "minilm", minilm.revision + "-bf16", 0.75

    block = matcher_manifest(settings, Bf16Like(), None)
    assert block["hybrid"]["fitted_on_revision"] == Bf16Like.revision and "warning" not in block


def test_a_known_method_on_another_problem_is_not_realised_by_its_paper(home, server_factory):
    (a, source_a), (b, source_b) = paper_idea(2)
    swap = {"id": "swap", "problem": a["problem"], "method": b["method"]}
    got = score(server_factory(home).url, [a, b, swap], run="swap").json()["ideas"]
    assert got[1]["matches"][0]["paper_id"] == source_b and got[1]["matches"][0]["realised"]  # b's own idea
    paper_b = next(m for m in got[2]["matches"] if m["paper_id"] == source_b)
    assert not paper_b["realised"] and not paper_b["direction"], paper_b  # b's method, another problem


def test_hybrid_at_a_window_equals_a_version_built_for_it(home, minilm):
    from service.scoring.answer import score_ideas
    from service.schemas import IdeaIn

    settings = Settings(home=home)
    wide = load_version(home / "indexes", current_version(home / "indexes"))
    dates = sorted(r["publication_date"] for r in wide.rows)
    cutoff, until = dates[len(dates) // 3], dates[-len(dates) // 4]
    window = wide.resolve_window(cutoff, until)
    narrow = build_index(settings, embedder=minilm, cutoff=date.fromisoformat(cutoff), until=date.fromisoformat(until))
    narrow = load_version(home / "indexes", narrow.version)
    assert window.papers == len(narrow.rows) < len(wide.rows)
    ideas = [IdeaIn(**i) for i, _ in paper_idea(6)] + [IdeaIn(**i) for i in sample_ideas(6)]

    def answer(loaded, w=None):
        return [[(m.paper_id, m.p_realised, m.p_direction, m.realised, m.direction, m.evidence) for m in i.matches]
                for i in score_ideas(ideas, loaded=loaded, embedder=minilm, top_k=20, window=w, matcher="hybrid")]

    assert answer(wide, window) == answer(narrow)  # BM25 statistics, pools and margins are the window's own
    assert answer(wide, window) != answer(wide)
