"""`hindsight evaluate` and `hindsight calibrate` on a tiny corpus through the real offline embedder."""

import json
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from indexing.build import build_index
from indexing.embedders import thetas
from indexing.ingest import ingest_path
from indexing.settings import get_settings

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "papers.jsonl"
UNRELATED = ["A sourdough starter that rises faster in cold kitchens",
             "Repairing cracked ceramic tiles with a two-part epoxy",
             "Training a border collie to herd ducks"]


@pytest.fixture
def tiny(settings, minilm, tmp_path, monkeypatch):
    """30 sample papers indexed with the real MiniLM; the CLI pointed at this HINDSIGHT_HOME."""
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:30]]
    path = tmp_path / "papers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ingest_path(path, db_path=settings.db_path)
    build_index(settings, embedder=minilm, cutoff=date(2000, 1, 1), until=date(2100, 12, 31))
    monkeypatch.setenv("HINDSIGHT_HOME", str(settings.home))
    monkeypatch.setattr("service.cli.calibrate.load_embedder", lambda key, s, theta=None: minilm)
    get_settings.cache_clear()
    yield rows
    get_settings.cache_clear()


def run(args: list[str]) -> dict:
    from service.cli import app

    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_evaluate_titles_and_unsourced_ideas(tiny, tmp_path):
    ideas = tmp_path / "ideas.jsonl"
    lines = [{"id": r["id"], "text": r["title"], "source": r["id"]} for r in tiny[:10]]
    lines += [{"id": f"u{i}", "text": t} for i, t in enumerate(UNRELATED)]
    lines.append({"id": "gone", "text": "Anything at all", "source": "hs-9999"})
    ideas.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = run(["evaluate", "--ideas", str(ideas), "--json"])
    counts = (out["ideas_in_file"], out["with_source"], out["without_source"], out["source_not_indexed"])
    assert counts == (14, 10, 3, 1)
    assert out["recall@20"] == 1.0 and out["recall@1"] >= 0.8 and out["recall@5"] >= out["recall@1"]
    assert out["false_match_rate"] == 0.0  # cooking, tiles and dogs match no ML paper above theta
    assert out["theta"] == pytest.approx(0.75) and out["model"] == "minilm"


def test_calibrate_writes_curve_plot_and_registry(tiny, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"id": r["id"], "text": r["title"], "paper_id": r["id"]}) + "\n"
                             for r in tiny) + json.dumps({"text": "x", "paper_id": "nope"}) + "\n")
    csv_path, png = tmp_path / "curve.csv", tmp_path / "curve.png"
    out = run(["calibrate", "--pairs", str(pairs), "--paper-text", "abstract", "--target-precision", "0.9",
               "--null", "--theta", "0.6", "--csv", str(csv_path), "--plot", str(png), "--write", "--json"])
    assert out["counts"]["ideas_used"] == 30 and out["counts"]["unresolved_paper_ids"] == 1
    pick = out["picked"]
    assert pick["precision"] >= 0.9 and 0 < pick["recall"] <= 1
    assert csv_path.read_text().startswith("theta,tp,fp,fn,precision,recall,f1,ideas_matched")
    assert png.stat().st_size > 10_000
    assert set(out["null"]["theta_percentiles"]) >= {"0.6", "0.75"}
    assert thetas.registry_theta("minilm", home=Path(out["written"]["registry"]).parent) == pick["theta"]


def test_evaluate_by_kind_compares_hybrid_dense_and_bm25(tiny, tmp_path):
    ideas = tmp_path / "labelled.jsonl"
    lines = []
    for r in tiny[:8]:
        first, *rest = r["abstract"].split(". ")
        lines.append({"id": r["id"], "kind": "paraphrase", "source_paper_id": r["id"], "problem": r["title"],
                      "method": ". ".join(rest) or first})
    lines += [{"id": f"v{i}", "kind": "vague", "source_paper_id": None, "problem": t, "method": t}
              for i, t in enumerate(UNRELATED)]
    lines.append({"id": "gone", "kind": "loose", "source_paper_id": "hs-9999", "problem": "p", "method": "m"})
    ideas.write_text("\ufeff" + "".join(json.dumps(x) + "\r\n" for x in lines))  # BOM and CRLF, as editors write
    out = run(["evaluate", "--ideas", str(ideas), "--resamples", "200", "--json"])
    assert (out["ideas_in_file"], out["ideas_scored"], out["source_not_indexed"]) == (12, 11, 1)
    assert set(out["by_kind"]) == {"hybrid", "dense", "bm25"} and out["matcher_version"].startswith("hybrid-")
    for method, kinds in out["by_kind"].items():
        para, vague = kinds["paraphrase"], kinds["vague"]
        assert para["recall@1"]["n"] == 8 and vague["any_realised"]["n"] == 3
        for iv in (para["recall@1"], para["source_realised"], vague["any_realised"]):
            assert iv["low"] <= iv["value"] <= iv["high"]
        assert vague["any_realised"]["value"] == 0.0, method  # sourdough, tiles and collies realise no ML paper
        assert ("source_direction" in para) == (method == "hybrid")
    assert out["by_kind"]["hybrid"]["paraphrase"]["recall@1"]["value"] >= 0.75


def test_calibrate_hybrid_writes_registry_report_and_the_next_build_uses_it(tiny, tmp_path, settings):
    from indexing.matcher.model import read_registry

    venues = ["aaa2024", "bbb2024", "ccc2024"]
    lines = []
    for i, r in enumerate(tiny[:24]):
        first, *rest = r["abstract"].split(". ")
        venue = venues[i % 3]
        if i % 4 == 3:  # same problem, a method from another field
            lines.append({"id": f"h{i}", "kind": "hard_negative", "source_venue": venue, "source_paper_id": r["id"],
                          "problem": r["title"], "method": UNRELATED[i % 3]})
        else:
            lines.append({"id": f"p{i}", "kind": "paraphrase", "source_venue": venue, "source_paper_id": r["id"],
                          "problem": r["title"], "method": ". ".join(rest) or first})
    lines += [{"id": f"v{i}", "kind": "vague", "source_venue": None, "source_paper_id": None, "problem": t,
               "method": t} for i, t in enumerate(UNRELATED * 2)]
    pairs = tmp_path / "labelled.jsonl"
    pairs.write_text("".join(json.dumps(x) + "\n" for x in lines))
    report = tmp_path / "docs" / "calibration-hybrid.md"
    out = run(["calibrate", "--matcher", "hybrid", "--pairs", str(pairs), "--report", str(report), "--json"])
    entry = out["entry"]
    assert out["registry"] == str(settings.home / "matchers" / "minilm-hybrid.json")
    (revision, stored), = read_registry(out["registry"]).items()
    assert revision == entry["revision"] and stored["version"] == entry["version"]
    assert entry["folds"] == ["aaa", "bbb", "ccc"] and entry["rule"] == "problem_and_method"
    # a method swap per paraphrase: its problem with the next paraphrase's method, within its field
    assert entry["kinds"] == {"hard_negative": 6, "method_swap": 18, "paraphrase": 18, "vague": 6}
    for model_name in ("direction", "method"):
        for shape in ("facets", "text"):
            model = entry["decisions"][model_name][shape]
            assert 0 <= model["threshold"] <= 1 and len(model["coef"]) == len(model["features"])
    assert set(out["out_of_fold"]["facets"]["fold_thresholds"]) == {"aaa", "bbb", "ccc"}
    assert set(out["out_of_fold"]["facets"]["per_field"]) == {"aaa", "bbb", "ccc"}
    text = report.read_text()
    assert "## Chosen thresholds and weights" in text and "idea-shaped pairs" in text
    # per field and style the page shows the bounded rate; every measure stays in the JSON beside it
    per_field = text.split("per field")[1].split("Per-field thresholds")[0]
    assert "`out_of_fold.facets.per_field`" in per_field and "recall@1" not in per_field
    assert report.with_suffix(".png").stat().st_size > 10_000 and json.loads(report.with_suffix(".json").read_text())
    # the user's entry wins over the shipped one at the next build, and the manifest records it whole
    built = build_index(get_settings(), cutoff=date(2000, 1, 1), until=date(2100, 12, 31))
    assert built.manifest["matcher"]["hybrid"]["version"] == entry["version"]
    assert built.manifest["matcher"]["hybrid"]["registry"] == out["registry"]


def test_calibrate_names_a_bad_date_instead_of_a_traceback(tiny, tmp_path):
    from service.cli import app

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"id": "a", "text": "t", "paper_id": tiny[0]["id"]}) + "\n")
    for option, value in (("--cutoff", "2023-13-01"), ("--until", "20230601")):
        result = CliRunner().invoke(app, ["calibrate", "--pairs", str(pairs), option, value])
        assert result.exit_code == 2 and result.exception is None or isinstance(result.exception, SystemExit)
        assert f"{option}: '{value}' is not a date (YYYY-MM-DD)" in result.output
