"""Pure parts of the hybrid matcher: BM25 normalisation, position ranges, threshold picking, out-of-fold fitting,
stored vectors of IVF indexes, the matcher registry."""

import subprocess
import sys

import numpy as np
import pytest

from indexing.lexical import MIN_TERMS, build_lexical, load_lexical, save_lexical, top_positions
from indexing.matcher import calibrate as cal
from indexing.matcher.facets import IdeaFacets
from indexing.matcher.features import ALL_FEATURES, Candidates
from indexing.matcher.model import SHIPPED_DIR, HybridMatcher, Logistic, find_entry, read_registry, write_entry
from indexing.matcher.vectors import stored_vectors
from indexing.vectorindex.faiss_index import FaissIndex
from tests.helpers import ROOT

TITLES = ["Sparse experts route tokens", "Kernel ridge regression at scale", "Robots grasp unseen objects", ""]
ABSTRACTS = ["We route tokens to sparse experts by position.", "Random features approximate kernels.",
             "A gripper learns to grasp objects it never saw.", ""]


def test_normalised_bm25_is_a_share_and_short_queries_carry_less():
    lx = build_lexical(TITLES, ABSTRACTS)
    assert lx.n_docs == 4  # the empty paper keeps its row
    long_q = lx.query("route tokens to sparse experts by position with learned gating over many layers of depth")
    short_q = lx.query("sparse experts")
    for q in (long_q, short_q):
        s = lx.normalised(q)
        assert s.shape == (4,) and np.all(s >= 0) and np.all(s < 1) and int(np.argmax(s)) == 0
    assert len(short_q.stems) < MIN_TERMS
    assert lx.normalised(short_q)[0] < 0.3  # two words cannot carry a proposal's lexical evidence
    assert lx.query("the of and").ceiling == 0 and not lx.normalised(lx.query("the of and")).any()
    # unknown words count in the ceiling and match nothing
    assert lx.query("zyxwv").ceiling > 0 and not lx.scores(lx.query("zyxwv")).any()


def test_position_ranges_and_round_trip(tmp_path):
    lx = build_lexical(TITLES, ABSTRACTS)
    assert [p for p, _ in lx.search("objects grasp kernels", 5)] == [2, 1]
    assert [p for p, _ in lx.search("objects grasp kernels", 5, allowed=(0, 2))] == [1]
    assert lx.search("objects", 5, allowed=(3, 4)) == []
    assert top_positions(np.array([0.0, 3.0, 3.0, 1.0]), 2) == [(1, 3.0), (2, 3.0)]  # ties: lower position first
    files = save_lexical(lx, tmp_path)
    assert all(f.parent == tmp_path and f.exists() for f in files)
    again = load_lexical(tmp_path, 4)
    q = again.query("sparse experts route tokens")
    assert np.allclose(again.scores(q), lx.scores(lx.query("sparse experts route tokens")))
    with pytest.raises(Exception, match="does not fit the 5 papers"):
        load_lexical(tmp_path, 5)


def test_pick_threshold_holds_every_negative_kind_to_the_target():
    negatives = {"hard_negative": np.array([0.1, 0.2, 0.55, 0.7]), "vague": np.array([0.1, 0.6])}
    t = cal.pick_threshold(negatives, target=0.25)
    assert (negatives["hard_negative"] >= t).mean() <= 0.25 and (negatives["vague"] >= t).mean() <= 0.25
    assert t > 0.6  # 0.6 itself would let half the vague ideas match
    assert cal.pick_threshold({"vague": np.array([0.1])}, target=0.05, floor=0.5) == 0.5  # never below a floor


def _stack(n_per_fold: int = 6) -> cal.Stacked:
    """Ideas of two kinds over four folds; the source candidate has high feature values."""
    rng = np.random.default_rng(0)
    ideas, cands = [], []
    for f in ("a", "b", "c", "d"):
        for j in range(n_per_fold):
            kind = "paraphrase" if j % 2 == 0 else "vague"
            feats = {name: rng.normal(0, 0.1, 10) for name in ALL_FEATURES}
            if kind == "paraphrase":
                for name in ALL_FEATURES:
                    feats[name][0] += 1.0
            ideas.append(cal.Labelled(id=f"{f}{j}", kind=kind, facets=IdeaFacets("x", "p", "m"),
                                      source=0 if kind == "paraphrase" else None, fold=f))
            cands.append(Candidates(positions=list(range(10)), features=feats, faceted=True))
    return cal.Stacked.of(ideas, cands)


def test_nested_out_of_fold_never_sees_the_judged_fold(monkeypatch):
    st = _stack()
    seen = []
    real_fit = cal.fit_logistic

    def spy(x, y, features, c=cal.C):
        seen.append(len(y))
        return real_fit(x, y, features, c)

    monkeypatch.setattr(cal, "fit_logistic", spy)
    prob, thresholds = cal.nested_oof(st, "facets", target=0.05)
    assert set(thresholds) == {"a", "b", "c", "d"} and not any(np.isnan(p).any() for p in prob.values())
    assert max(seen) == 3 * 6 * 10  # no fit ever had more than three folds' rows
    outcomes = cal.outcomes(st, prob, thresholds)
    realised = [o for o in outcomes if o.kind == "paraphrase"]
    assert all(o.ranked[0] == 0 for o in realised)
    assert not any(any(o.realised) for o in outcomes if o.kind == "vague")


def test_ivf_indexes_give_their_stored_vectors_back():
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(400, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = FaissIndex.create(16, factory="IDMap2,IVF4,SQ8")
    index.index.train(vecs)
    index.add(vecs, np.arange(1000, 1400, dtype=np.int64))
    got = stored_vectors(index, np.array([1000, 1399]))
    assert got is not None and np.allclose(got, vecs[[0, 399]], atol=0.02)


def test_registry_is_keyed_by_revision(tmp_path):
    assert read_registry(tmp_path / "none.json") == {}
    entries = read_registry(SHIPPED_DIR / "minilm-hybrid.json")  # the default backend's fit (bf16)
    assert entries and all(e["revision"] == r for r, e in entries.items())
    rev, shipped = next(iter(entries.items()))
    matcher = HybridMatcher.from_entry(shipped)
    assert matcher.rule == "problem_and_method" and set(matcher.thresholds()) == {"direction", "method"}
    assert isinstance(matcher.model("method", "facets"), Logistic)
    home = tmp_path / "home"
    mine = {**shipped, "version": "hybrid-mine"}
    write_entry(home / "matchers" / "minilm-hybrid.json", "gt-other-onnx-int8", mine)
    assert find_entry("minilm", "gt-other-onnx-int8", home=home)["version"] == "hybrid-mine"
    assert find_entry("minilm", rev, home=home)["version"] == shipped["version"]  # the shipped one for its revision
    fallback = find_entry("minilm", "gt-never-fitted", home=home)
    assert fallback["fitted_on_revision"] != "gt-never-fitted"
    assert find_entry("specter2", "any", home=home) is None
    with pytest.raises(ValueError, match="threshold"):
        Logistic.from_dict({**shipped["decisions"]["method"]["facets"], "threshold": 2})


def test_migration_0003_keeps_scores_stored_before_it(tmp_path):
    import sqlite3

    from alembic import command

    from indexing.db import alembic_config, get_engine, session_scope
    from indexing.models import Run
    from service.runs import run_scores

    db = tmp_path / "h.db"
    with get_engine(db).connect() as conn:
        conn.exec_driver_sql("PRAGMA journal_mode=WAL")
    command.upgrade(alembic_config(db), "0002")
    con = sqlite3.connect(db)
    con.execute("insert into runs (id, system, label, created_at) values (1, 's', 'r', '2026-01-01')")
    con.execute("insert into ideas (pk, run_id, idea_id, problem, method) values (1, 1, 'i', 'p', 'm')")
    con.execute("insert into scores (id, idea_pk, score, matched, model, theta, index_version, cutoff, window_end, "
                "top_k, scored_at) values (1, 1, 0.5, 1, 'minilm', 0.75, 'v0001', '2023-06-01', '2025-12-31', 20, "
                "'2026-01-01')")
    con.execute("insert into matches (score_id, rank, paper_id, title, venue, year, citations, similarity, impact, "
                "above_threshold) values (1, 1, 'p1', 'T', 'V', 2024, 3, 0.8, 0.5, 1)")
    con.commit()
    con.close()
    command.upgrade(alembic_config(db), "head")
    with session_scope(db) as session:
        out = run_scores(session, session.get(Run, 1))["scores"][0]
    assert out["matcher"] == "dense" and out["thresholds"] == {"theta": 0.75} and out["direction_score"] is None
    assert out["matches"][0]["p_realised"] is None and out["matches"][0]["evidence"] is None
    command.downgrade(alembic_config(db), "0002")
    cols = {r[1] for r in sqlite3.connect(db).execute("pragma table_info(matches)")}
    assert "p_realised" not in cols and "similarity" in cols


def test_one_facet_ideas_are_text_ideas_without_the_separator(minilm):
    from indexing.matcher.facets import facets_of

    f = facets_of(minilm, problem="  ", method="Route tokens to sparse experts.")
    assert not f.faceted and f.whole == f"{minilm.sep}Route tokens to sparse experts."  # as the dense rule embeds it
    assert f.lexical_texts() == {"whole": "Route tokens to sparse experts."}
    both = facets_of(minilm, problem="Long documents.", method="Sparse experts.")
    assert both.faceted and both.lexical_texts()["whole"] == "Long documents.\nSparse experts."


def _unit(rng, n: int, dim: int = 16) -> np.ndarray:
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_near_copies_count_as_one_for_the_margins():
    from indexing.matcher.corpus import ArrayCorpus
    from indexing.matcher.features import candidates, queries_of

    rng = np.random.default_rng(3)
    vecs = _unit(rng, 6)
    vecs[5] = vecs[0]  # a preprint and its proceedings version under two ids
    titles = ["Sparse experts route tokens", "Kernels", "Robots", "Graphs", "Bandits", "Sparse experts route tokens"]
    corpus = ArrayCorpus(vecs, build_lexical(titles, ["We route tokens to experts."] + [""] * 4 +
                                             ["We route tokens to experts."]), titles)
    idea = IdeaFacets("sparse experts", "Route tokens.", "Sparse experts.")
    query = vecs[0] + 0.1 * _unit(rng, 1)[0]
    facet_vectors = {f: query / np.linalg.norm(query) for f in ("whole", "problem", "method")}
    c = candidates(corpus, facet_vectors, queries_of(corpus.lexical, idea), faceted=True, n=6)
    at = {p: i for i, p in enumerate(c.positions)}
    for name in ("cos_whole_margin", "cos_method_margin", "bm25_method_margin"):
        assert c.features[name][at[0]] > 0 and c.features[name][at[5]] > 0, name  # both copies keep their lead
    assert c.features["cos_gap"][at[0]] <= 0  # the old gap: the copy cancels the lead


def _entry(threshold: float = 0.5) -> dict:
    def model(feature: str) -> dict:
        return {"features": [feature], "mean": [0.5], "scale": [0.1], "coef": [4.0], "intercept": 0.0,
                "threshold": threshold}

    text = {"direction": model("cos_whole"), "method": model("cos_whole")}
    return {"version": "hybrid-test", "rule": "problem_and_method",
            "decisions": {"direction": {"facets": model("cos_problem"), "text": text["direction"]},
                          "method": {"facets": model("cos_method"), "text": text["method"]}}}


def test_a_known_method_on_another_problem_is_not_realised():
    from indexing.matcher.decide import rank

    matcher = HybridMatcher.from_entry(_entry())
    assert set(matcher.thresholds()) == {"direction", "method"}
    # candidate 0: the idea's problem and method; 1: its method on another problem (a method swap's paper);
    # 2: its problem by other means (a hard negative's source)
    feats = {"cos_problem": np.array([0.8, 0.2, 0.8]), "cos_method": np.array([0.8, 0.9, 0.45])}
    cands = Candidates(positions=[10, 11, 12], features=feats, faceted=True)
    p = matcher.probabilities("facets", cands)
    is_r, is_d = matcher.decisions("facets", p)
    assert list(is_r) == [True, False, False] and list(is_d) == [True, False, True]
    assert p["method"][1] > p["method"][0]  # the method alone would have picked the swap's paper
    order, realised, direction = rank(p["realised"], p["direction"], is_r, is_d, 3)
    assert list(order) == [0, 2, 1] and list(realised) == [True, False, False]
    assert all(d or not r for r, d in zip(realised, direction))  # realised implies direction


def test_entries_fitted_before_the_rule_keep_their_own_realised_model():
    old = next(iter(read_registry(SHIPPED_DIR / "minilm-hybrid.json").values()))
    legacy = {**old, "rule": "realised_model",
              "decisions": {"realised": _entry()["decisions"]["method"],
                            "direction": _entry()["decisions"]["direction"]}}
    matcher = HybridMatcher.from_entry(legacy)
    feats = {"cos_problem": np.array([0.2]), "cos_method": np.array([0.9])}
    is_r, is_d = matcher.decisions("facets", matcher.probabilities(
        "facets", Candidates(positions=[1], features=feats, faceted=True)))
    assert list(is_r) == [True] and list(is_d) == [False]  # the old rule; rank() still makes it a direction match
    with pytest.raises(ValueError, match="rule"):
        HybridMatcher.from_entry({**legacy, "rule": "both"})


def test_out_of_range_ideas_are_warned_and_never_realised(minilm):
    from indexing.matcher.facets import facets_of
    from indexing.matcher.ranges import check_all

    method = ("We fine-tune a retrieval-augmented reader with contrastive negatives mined from the index, then "
              "distil it into a small student that answers open-domain questions offline.")
    problem = "Open-domain question answering models are too large to run on a phone without a network."
    ideas = [facets_of(minilm, problem=problem, method=method),
             facets_of(minilm, problem=problem),
             facets_of(minilm, text="Sparse expert routing"),
             facets_of(minilm, problem="Große Sprachmodelle beantworten Fragen zu Dokumenten oft falsch, weil "
                                       "sie die relevanten Stellen im Kontext nicht finden und übersehen.",
                       method="Wir schlagen vor, die Dokumente zuerst in Abschnitte zu teilen und dann jeden "
                              "Abschnitt mit einem kleinen Modell zu bewerten, bevor das große Modell antwortet."),
             facets_of(minilm, problem=problem, method=" ".join([method] * 12))]
    ranges = check_all(minilm, ideas)
    assert ranges[0].warnings == [] and ranges[0].can_realise
    assert not ranges[1].can_realise and "no method" in ranges[1].warnings[0]
    assert not ranges[2].can_realise and "very short" in ranges[2].warnings[0]
    assert not ranges[3].can_realise and any("not English" in w for w in ranges[3].warnings)
    assert ranges[4].can_realise and any("past the embedder's 256" in w and w.startswith("method")
                                         for w in ranges[4].warnings)
    assert "direction only" in ranges[1].for_hybrid()[-1]


def test_pair_only_features_do_not_move_with_the_other_candidates(tmp_path):
    from indexing.matcher.corpus import ArrayCorpus
    from indexing.matcher.features import PAIR_ONLY, candidates, queries_of
    from indexing.matcher.reference import (
        ReferenceMissing, build_lexicon, build_spread, read_lexicon, read_spread, write_lexicon, write_spread,
    )

    rng = np.random.default_rng(5)
    vecs = _unit(rng, 6)
    titles = ["Sparse experts route tokens", "Kernels for graphs", "Robots grasp", "Graph kernels", "Bandit regret",
              "Routing tokens to experts"]
    abstracts = ["We route tokens to sparse experts with a learned gate.", "Kernels on graphs.", "Grasping.",
                 "Graph kernels again.", "Regret of bandits.", "Experts and tokens, routed by a gate."]
    lexicon = build_lexicon(f"{t}\n{a}" for t, a in zip(titles, abstracts))
    name = write_lexicon(tmp_path, lexicon)
    assert write_lexicon(tmp_path, lexicon) == name and read_lexicon(name, [tmp_path]).df == lexicon.df
    spread = read_spread(write_spread(tmp_path, build_spread(vecs, k=3)), [tmp_path])
    idea = IdeaFacets("sparse experts", "Route tokens to experts.", "A learned gate over sparse experts.")
    facet_vectors = {f: vecs[0] for f in ("whole", "problem", "method")}

    def features(keep: list[int]) -> dict[str, float]:
        corpus = ArrayCorpus(vecs[keep], build_lexical([titles[k] for k in keep], [abstracts[k] for k in keep]),
                             [titles[k] for k in keep])
        c = candidates(corpus, facet_vectors, queries_of(corpus.lexical, idea), faceted=True, n=6, lexicon=lexicon,
                       spread=spread, words=idea.words)
        at = c.positions.index(0)
        return {n: float(c.features[n][at]) for n in (*PAIR_ONLY, "cos_whole", "cos_method_own")}

    alone, crowded = features([0, 4]), features([0, 1, 2, 3, 4, 5])  # paper 0 with other neighbours, other idf
    assert alone == crowded and 0 < alone["lex_method"] <= 1 and alone["cos_whole_z"] > 1
    (tmp_path / name).write_text((tmp_path / name).read_text().replace('"documents":6', '"documents":7'))
    with pytest.raises(ValueError, match="does not match its name"):
        read_lexicon(name, [tmp_path])
    with pytest.raises(ReferenceMissing):
        read_lexicon("lexicon-000000000000.json", [tmp_path / "nowhere"])


def test_an_entry_whose_reference_file_is_gone_is_refused_when_it_loads():
    entry = {**_entry(), "lexicon": "lexicon-000000000000.json", "registry": "/nowhere/minilm-hybrid.json"}
    with pytest.raises(ValueError, match="lexicon-000000000000.json"):
        HybridMatcher.from_entry(entry)


EVIDENCE_TIE = """
from types import SimpleNamespace
import numpy as np
from indexing.matcher.evidence import evidence
lexical = SimpleNamespace(bm25=SimpleNamespace(vocab_dict={"delta": 0, "alpha": 1, "beta": 2, "gamma": 3}),
                          idf=np.array([3.6, 1.1, 1.2, 1.3]), oov_idf=1.0)
print(evidence(lexical, "delta alpha beta gamma", "t", "Delta here. Alpha beta gamma there.")["sentence"])
"""


def test_the_evidence_sentence_does_not_depend_on_the_processs_hash_seed():
    # 1.1 + 1.2 + 1.3 sums to 3.5999999999999996, 3.6 or 3.6000000000000005 by the order a set of stems is walked in,
    # which string hashing changes per process: a tie with "delta" (3.6) was broken differently from run to run
    picked = {subprocess.run([sys.executable, "-c", EVIDENCE_TIE], cwd=ROOT, capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin"}).stdout.strip()
              for seed in range(12)}
    assert picked == {"Delta here."}
