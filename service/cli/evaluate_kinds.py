"""`hindsight evaluate --ideas FILE` for labelled ideas (a `kind` per idea): per kind, hybrid vs dense-only vs
BM25-only on the current index, with bootstrap intervals."""

from pathlib import Path

import numpy as np
from rich.table import Table

from indexing.embedders import join
from indexing.matcher.evaluate import METRICS, Outcome, summarise
from indexing.matcher.features import IdeaFacets, encode_facets
from service.cli.common import console, fail, print_json
from service.matching import MatcherUnavailable, corpus_of, decide, hybrid_of

METHODS = ("hybrid", "dense", "bm25")


def has_kinds(records: list[tuple[int, dict]]) -> bool:
    return any(isinstance(r, dict) and r.get("kind") for _, r in records)


def evaluate_kinds(path: Path, records: list[tuple[int, dict]], *, loaded, embedder, top_k: int, resamples: int,
                   json_out: bool) -> None:
    try:
        matcher = hybrid_of(loaded)
    except MatcherUnavailable as exc:
        fail(f"{exc} (evaluate by kind compares the hybrid matcher with dense-only and BM25-only)", 1)
    corpus = corpus_of(loaded)
    position = {r["paper_id"]: i for i, r in enumerate(corpus.rows)}
    ideas, kinds, sources, not_indexed = [], [], [], []
    for n, rec in records:
        if not isinstance(rec, dict):
            fail(f"{path}:{n}: each record must be an object")
        problem, method, text = rec.get("problem"), rec.get("method"), rec.get("text") or rec.get("idea")
        if not any(isinstance(v, str) and v.strip() for v in (problem, method, text)):
            fail(f"{path}:{n}: field 'problem': an idea needs 'problem' + 'method' or 'text'")
        source = rec.get("source_paper_id") or rec.get("source")
        if source and str(source) not in position:
            not_indexed.append({"line": n, "id": rec.get("id"), "source": source})
            continue
        if text:
            ideas.append(IdeaFacets(str(text).strip()))
        else:
            p, m = (problem or "").strip(), (method or "").strip()
            ideas.append(IdeaFacets(join(embedder, p, m), p or None, m or None, plain=p or m))
        kinds.append(str(rec.get("kind") or "unlabelled"))
        sources.append(position[str(source)] if source else None)
    if not ideas:
        fail(f"{path}: no idea whose source is in index {loaded.version} ({len(not_indexed)} name a source outside "
             "it: widen the window or ingest those papers)", 1)
    k = max(20, top_k)
    facet_vectors = encode_facets(embedder.encode, ideas)  # once: the hybrid and dense-only rows share them
    hybrid = decide(ideas, loaded=loaded, embedder=embedder, top_k=k, vectors=facet_vectors)
    theta = loaded.manifest["theta"]
    vecs = np.stack([v["whole"] for v in facet_vectors])
    dense_hits = corpus.dense(vecs, k)
    bm25_t = float(matcher.entry.get("baselines", {}).get("bm25_whole_threshold", 1.0))
    outcomes: dict[str, list[Outcome]] = {m: [] for m in METHODS}
    for idea, kind, src, h, dense in zip(ideas, kinds, sources, hybrid, dense_hits):
        outcomes["hybrid"].append(Outcome(kind, src, h["positions"], [bool(x) for x in h["realised"]],
                                          [bool(x) for x in h["direction"]]))
        outcomes["dense"].append(Outcome(kind, src, [p for p, _ in dense], [s >= theta for _, s in dense], None))
        q = corpus.lexical.query(idea.lexical_texts()["whole"])
        scores = corpus.lexical.normalised(q)
        top = np.argsort(-scores, kind="stable")[:k]
        top = [int(p) for p in top if scores[p] > 0]
        outcomes["bm25"].append(Outcome(kind, src, top, [bool(scores[p] >= bm25_t) for p in top], None))
    report = {"index_version": loaded.version, "model": loaded.manifest["model"],
              "revision": loaded.manifest["revision"], "matcher_version": matcher.version,
              "thresholds": {"hybrid": matcher.thresholds(), "dense": {"theta": theta},
                             "bm25": {"bm25_whole": bm25_t}},
              "top_k": k, "ideas_file": str(path), "ideas_in_file": len(records), "ideas_scored": len(ideas),
              "source_not_indexed": len(not_indexed), "source_not_indexed_examples": not_indexed[:5],
              "by_kind": {m: summarise(o, resamples=resamples) for m, o in outcomes.items()}}
    if json_out:
        print_json(report)
        return
    table = Table("kind", "measure", *METHODS, title=f"index {loaded.version} ({report['model']}), matcher "
                  f"{matcher.version}, top-{k}; rates with 95% bootstrap intervals")
    for kind, summary in report["by_kind"]["hybrid"].items():
        for metric in METRICS:
            if metric not in summary:
                continue
            cells = []
            for m in METHODS:
                iv = report["by_kind"][m].get(kind, {}).get(metric)
                cells.append("-" if not iv or iv["value"] is None else
                             f"{iv['value']:.3f} [{iv['low']:.2f}, {iv['high']:.2f}] n={iv['n']}")
            table.add_row(kind, metric, *cells)
    console.print(table)
    if not_indexed:
        console.print(f"{len(not_indexed)} ideas name a source outside index {loaded.version}; left out of every "
                      "rate above", highlight=False)
