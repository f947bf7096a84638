"""Per-request windows from one index: scoring at cutoff X on a wide index equals scoring on an index built at X.

Flat indexes are exact, so the equality is exact. For IVF the equality is exact when every inverted list is probed
(nprobe = nlist, set below on both indexes) and the codes are lossless (IVF,Flat): a separately built IVF index
trains its own centroids (and, for SQ8, its own quantiser ranges), so with lossy codes or fewer probed lists the two
indexes hold different approximations and only agree up to their recall. The range search itself adds no error:
with nprobe = nlist it returns exactly the exact range top-k of the same index.
"""

import json
import shutil
import sqlite3
from datetime import date
from pathlib import Path

import faiss
import numpy as np
import pytest

from indexing.build import build_index
from indexing.db import migrate
from indexing.ingest import ingest_bytes
from indexing.settings import Settings
from indexing.vectorindex.faiss_index import apply_search_params, is_ivf
from indexing.versions import load_version
from indexing.windows import PaperTable, Window, WindowError, cohort_of
from service.scoring.answer import embed_ideas, score_ideas
from service.schemas import IdeaIn
from service.scoring.store import context_of
from tests.factories import make_old_version
from tests.helpers import ROOT, run_cli

WINDOWS = [("2023-06-01", "2025-12-31"), ("2023-12-01", "2025-12-31"), ("2024-06-01", "2025-12-31"),
           ("2025-01-01", "2025-12-31"), ("2023-09-15", "2024-12-31"), ("2024-03-01", "2025-06-30")]


def read_ideas() -> list[IdeaIn]:
    lines = [*(ROOT / "data/ideas/rag.jsonl").read_text().splitlines(),
             *(ROOT / "data/ideas/vanilla.jsonl").read_text().splitlines()]
    return [IdeaIn.model_validate_json(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def template(tmp_path_factory, minilm) -> Path:
    """A database with the sample papers ingested and their vectors cached, copied by each test."""
    s = Settings(home=tmp_path_factory.mktemp("template"), service={"admin_token": "t"})
    migrate(s.db_path)
    ingest_bytes((ROOT / "data/papers.jsonl").read_bytes(), "papers.jsonl", db_path=s.db_path)
    build_index(s, embedder=minilm)
    with sqlite3.connect(s.db_path) as conn:  # everything into the main file, so a copy of it is complete
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return s.db_path


@pytest.fixture
def home_with_papers(template):
    def make(root: Path, **settings) -> Settings:
        root.mkdir(parents=True)
        shutil.copy(template, root / "hindsight.db")
        return Settings(home=root, service={"admin_token": "t"}, **settings)

    return make


def exhaustive(loaded) -> None:
    """Probe every inverted list: the IVF search is then exact over its codes."""
    if is_ivf(loaded.index.index):
        apply_search_params(loaded.index.index, {"nprobe": faiss.extract_index_ivf(loaded.index.index).nlist})


def snapshot(results, context) -> list:
    return [(r.id, r.score, r.matched, [(m.paper_id, m.impact, m.above_threshold) for m in r.matches],
             [m.similarity for m in r.matches], context.cutoff, context.window) for r in results]


def assert_same(wide, narrow) -> None:
    assert len(wide) == len(narrow)
    for a, b in zip(wide, narrow):
        assert a[:4] == b[:4]  # ids, scores, matched, and each match's paper, impact and threshold flag
        assert np.allclose(a[4], b[4], atol=2e-6)  # cosines: the same vectors, another BLAS path
        assert a[5:] == b[5:]  # both answers name the same effective window


@pytest.mark.parametrize("factory,normalisation,windows", [
    (None, "global", WINDOWS), (None, "cohort", WINDOWS[1:4]), ("IVF8,Flat", "global", WINDOWS[2:5])])
def test_cutoff_on_wide_index_equals_index_built_at_cutoff(tmp_path, minilm, home_with_papers, factory,
                                                           normalisation, windows):
    settings = home_with_papers(tmp_path / "home", index={"citation_normalisation": normalisation})
    ideas = read_ideas()
    first = build_index(settings, embedder=minilm, factory=factory)
    assert first.manifest["counts"]["embedded_new"] == 0  # the template's cache
    wide = load_version(settings.indexes_dir, first.version)
    exhaustive(wide)
    assert wide.manifest["vector_ids"] == "date_order"
    assert wide.manifest["impact"]["citation_normalisation"] == normalisation
    if factory:
        assert wide.manifest["index"]["factory"] == factory
    matched_somewhere = 0
    vectors = embed_ideas(minilm, ideas, "dense")  # what score_ideas embeds; once for both sides
    for cutoff, until in windows:
        window = wide.resolve_window(cutoff, until)
        got = snapshot(score_ideas(ideas, loaded=wide, embedder=minilm, top_k=20, window=window, matcher="dense",
                                   vectors=vectors), _ctx(wide, window))
        built = build_index(settings, embedder=minilm, factory=factory, cutoff=date.fromisoformat(cutoff),
                            until=date.fromisoformat(until))
        assert built.manifest["counts"]["embedded_new"] == 0  # the cache served every vector
        narrow = load_version(settings.indexes_dir, built.version)
        exhaustive(narrow)
        assert narrow.manifest["counts"]["indexed"] == window.papers
        want = snapshot(score_ideas(ideas, loaded=narrow, embedder=minilm, top_k=20, matcher="dense",
                                    vectors=vectors), _ctx(narrow, None))
        assert_same(got, want)
        # the stored impact block names the window's own citation min/max, like the narrow build's manifest
        assert _ctx(wide, window).impact["citation_max"] == narrow.manifest["impact"]["citation_max"]
        if normalisation == "cohort":
            assert _ctx(wide, window).impact["cohorts"] == narrow.manifest["impact"]["cohorts"]
        matched_somewhere += sum(r[2] for r in got)
    assert matched_somewhere > 0  # the comparison covered real matches, not only empty answers


def _ctx(loaded, window):
    from service.scoring.plan import WindowPlan

    return context_of(loaded, 20, WindowPlan(window, "request") if window else None)


def test_range_search_on_ivf_sq8_returns_only_window_papers_and_exact_with_all_lists(tmp_path, minilm,
                                                                                     home_with_papers):
    settings = home_with_papers(tmp_path / "home")
    loaded = load_version(settings.indexes_dir,
                          build_index(settings, embedder=minilm, factory="IVF8_HNSW32,SQ8").version)
    queries = minilm.encode([i.method for i in read_ideas()])
    lo, hi = loaded.window_range("2024-06-01", "2025-06-30")
    assert 0 < lo < hi < len(loaded.rows)
    for row in loaded.search_positions(queries, 20, allowed=(lo, hi)):
        assert row and all(lo <= p < hi for p, _ in row)
    exhaustive(loaded)
    # with every list probed, the range search is the exact range top-k over the index's own codes
    got_sims, got_ids = loaded.index.search(queries, 20, allowed=(lo, hi))
    all_sims, all_ids = loaded.index.search(queries, len(loaded.rows))  # every vector, by the same code scores
    for g_sims, g_ids, sims, ids in zip(got_sims, got_ids, all_sims, all_ids):
        inside = (ids >= lo) & (ids < hi)
        assert np.allclose(g_sims, sims[inside][:20], atol=1e-6)
        assert set(g_ids) <= set(ids[inside])


def test_windows_bisect_on_dates_and_check_their_bounds():
    rows = [{"publication_date": d, "citations": c, "top_venue": t} for d, c, t in [
        ("2023-06-01", 10, True), ("2023-06-01", None, False), ("2023-12-31", 100, False),
        ("2024-01-01", 50, True), ("2024-07-01", 0, False), ("2025-12-31", 30, True)]]
    table = PaperTable.of(rows)
    from indexing.windows import resolve_window

    def window(cutoff=None, until=None, ordered=True):
        return resolve_window(built=("2023-06-01", "2025-12-31"), dates=table.dates, ordered=ordered, version="v9",
                              cutoff=cutoff, until=until)

    assert window().range == (0, 6)
    assert window("2023-06-02").range == (2, 6)
    assert window("2024-01-01", "2024-07-01").range == (3, 5)  # both ends inclusive
    assert window(until="2023-06-01").range == (0, 2)
    for kwargs, field, text in [
        ({"cutoff": "2023-05-31"}, "cutoff", "outside the built range"),
        ({"cutoff": "2026-01-01"}, "cutoff", "outside the built range"),
        ({"until": "2026-01-01"}, "until", "outside the built range"),
        ({"cutoff": "2024-02-01", "until": "2024-01-01"}, "until", "before the cutoff"),
        ({"cutoff": "2024-02-30"}, "cutoff", "not a date"),
        ({"cutoff": "20240201"}, "cutoff", "not a date"),
        ({"until": "soon"}, "until", "not a date"),
        ({"cutoff": "2024-08-01", "until": "2025-12-30"}, "cutoff", "no indexed paper"),
        ({"cutoff": "2024-01-01", "ordered": False}, "cutoff", "built before per-request windows"),
    ]:
        with pytest.raises(WindowError) as err:
            window(**kwargs)
        assert err.value.field == field and text in str(err.value), (kwargs, str(err.value))
        assert err.value.detail()["allowed"] == {"start": "2023-06-01", "end": "2025-12-31"}
    assert window(ordered=False).range == (0, 6)  # an old version serves its built window

    # global c_hat: min-max over the window only; cached per window
    w = window("2023-12-01")
    impacts = table.impacts(w)
    assert impacts.c_hat.tolist() == [1.0, 0.5, 0.0, 0.3]
    assert impacts.stats["citation_max"] == 100 and impacts.stats["papers"] == 4
    assert table.impacts(Window(w.start, w.end, *w.range)) is impacts and table.cached_windows == 1
    assert impacts.impact.tolist() == pytest.approx([0.6, 0.3 + 0.4, 0.0, 0.18 + 0.4])
    from indexing import windows

    many = PaperTable.of([{"publication_date": f"2024-01-{1 + i % 28:02d}", "citations": i} for i in range(100)])
    for hi in range(1, windows.CACHED_WINDOWS + 10):  # a client walking through many windows: the cache is bounded
        many.impacts(Window(w.start, w.end, 0, hi))
    assert many.cached_windows == windows.CACHED_WINDOWS


def test_cohort_normalisation_is_min_max_within_publication_half_year():
    assert [cohort_of(d) for d in ("2024-01-01", "2024-06-30", "2024-07-01", "2024-12-31")] == \
        ["2024H1", "2024H1", "2024H2", "2024H2"]
    rows = [{"publication_date": d, "citations": c, "top_venue": False} for d, c in [
        ("2023-07-01", 10), ("2023-08-01", 30), ("2024-02-01", 1000), ("2024-03-01", 0), ("2024-04-01", 500)]]
    table = PaperTable.of(rows, normalisation="cohort")
    impacts = table.impacts(Window(date(2023, 6, 1), date(2025, 12, 31), 0, 5))
    assert impacts.c_hat.tolist() == [0.0, 1.0, 1.0, 0.0, 0.5]  # a young, little-cited paper tops its own cohort
    assert impacts.stats["cohorts"]["2023H2"] == {"citation_min": 10.0, "citation_max": 30.0, "papers": 2}
    assert PaperTable.of(rows).impacts(Window(date(2023, 6, 1), date(2025, 12, 31), 0, 5)).c_hat[1] == 0.03



def test_old_version_serves_its_built_window_and_refuses_others(tmp_path, minilm, home_with_papers):
    settings = home_with_papers(tmp_path / "home")
    built = build_index(settings, embedder=minilm)
    make_old_version(settings.indexes_dir, built.version, "v0900")
    old, new = load_version(settings.indexes_dir, "v0900"), load_version(settings.indexes_dir, built.version)
    assert not old.date_ordered and new.date_ordered
    ideas = read_ideas()
    a = snapshot(score_ideas(ideas, loaded=old, embedder=minilm, top_k=20), _ctx(old, None))
    b = snapshot(score_ideas(ideas, loaded=new, embedder=minilm, top_k=20, matcher="dense"), _ctx(new, None))
    assert_same(a, b)
    assert _ctx(old, None).impact["citation_normalisation"] == "global"
    with pytest.raises(WindowError, match="built before per-request windows"):
        old.resolve_window("2024-01-01")
    assert old.resolve_window("2023-06-01", "2025-12-31").range == (0, len(old.rows))


@pytest.mark.server
def test_cli_system_score_at_cutoff_and_sensitivity(tmp_path, minilm, home_with_papers):
    settings = home_with_papers(tmp_path / "home")
    home = settings.home
    build_index(settings, embedder=minilm)
    out = run_cli(home, "system", "set", "rag-generator", "--knowledge-cutoff", "2023-12-01", "--model", "m", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["knowledge_cutoff"] == "2023-12-01"
    rag = str(ROOT / "data/ideas/rag.jsonl")
    out = run_cli(home, "score", rag, "--system", "rag-generator", "--run", "own", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["window"] == {"start": "2023-12-01", "end": "2025-12-31"}
    out = run_cli(home, "score", rag, "--system", "rag-generator", "--run", "early", "--cutoff", "2023-06-01")
    assert out.returncode == 0 and "leak_risk" in out.stderr and "LEAK RISK" in out.stderr
    out = run_cli(home, "analyze", "systems", "--pool-windows", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["leak_risk"]["ideas"] == 12
    plot = tmp_path / "c.svg"
    out = run_cli(home, "analyze", "cutoffs", "--run", "own", "--cutoffs", "2023-06-01,2024-06-01", "--plot", str(plot),
             "--json")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert [g["leak_risk"] for e in answer["cutoffs"] for g in e["groups"]] == [True, False]
    assert plot.read_text().lstrip().startswith("<?xml")
    out = run_cli(home, "analyze", "cutoffs", "--run", "own", "--cutoffs", "2030-01-01")
    assert out.returncode == 2 and "--cutoffs" in out.stderr and "outside the built range" in out.stderr


def test_window_report_of_an_empty_selection(settings):
    from indexing.db import session_scope
    from service.analyses import Selection, correlations, systems_summary

    with session_scope(settings.db_path) as session:
        for by in ("system", "window"):
            answer = systems_summary(session, selection=Selection(group_by=by))
            assert answer["windows"] == [] and answer["leak_risk"] == {"ideas": 0, "systems": []}
        assert correlations(session, selection=Selection())["pooled_windows"] is False
