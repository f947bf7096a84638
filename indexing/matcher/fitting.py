"""`hindsight calibrate --matcher hybrid` as a library call: read labelled ideas, build their candidate pools over
the ingested corpus, fit the realised / direction models, judge them out-of-fold, write the registry entry."""

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from indexing import calibration as dense_cal
from indexing.embed_cache import embed_with_cache
from indexing.embedders import Embedder, join
from indexing.lexical import build_lexical
from indexing.matcher import calibrate as cal
from indexing.matcher.corpus import ArrayCorpus
from indexing.matcher.evaluate import summarise
from indexing.matcher.features import N_CANDIDATES
from indexing.matcher.labelled import LabelledError, read_labelled
from indexing.matcher.reference import build_lexicon, build_spread, write_lexicon, write_spread
from indexing.matcher.model import RULES, SHAPES, user_registry, write_entry
from indexing.settings import Settings

HEADLINE = {"paraphrase": "source_realised", "loose": "source_realised", "hard_negative": "any_realised",
            "method_swap": "any_realised", "vague": "any_realised"}
RULE = "problem_and_method"


@dataclass
class Corpus:
    """The ingested papers (database order) with their vectors and BM25: what labelled ideas are judged against."""

    rows: list
    corpus: ArrayCorpus
    embedded: int  # papers embedded now (the rest came from the embedding cache)

    @property
    def position(self) -> dict[str, int]:
        return {r.paper_id: i for i, r in enumerate(self.rows)}


def load_corpus(settings: Settings, embedder: Embedder, progress=None) -> Corpus:
    rows = dense_cal.papers_in_db(settings.db_path)
    if not rows:
        raise LookupError("no papers in the database: ingest the corpus the ideas were written for "
                          "(`hindsight ingest`)")
    vectors, embedded = embed_with_cache(embedder, [join(embedder, r.title, r.abstract) for r in rows],
                                         db_path=settings.db_path, batch_size=settings.index.batch_size,
                                         progress=progress)
    titles = [r.title for r in rows]
    return Corpus(rows, ArrayCorpus(vectors, build_lexical(titles, [r.abstract for r in rows]), titles), embedded)


def labelled_ideas(paths: Sequence[Path], embedder: Embedder,
                   position: dict[str, int]) -> tuple[list[cal.Labelled], list]:
    """The files' ideas whose source is in the corpus (the others are returned as skipped), with their folds (the
    field: `fold`, else the venue family), plus a method swap per realised idea (calibrate.method_swaps)."""
    ideas, skipped = [], []
    for path in paths:
        families, mine = [], []
        for rec in read_labelled(path, kinds=cal.KINDS - cal.SWAP_KINDS, sourceless=cal.NONE_KINDS):
            if rec.source and rec.source not in position:
                skipped.append({"file": path.name, "line": rec.line, "id": rec.id, "source_paper_id": rec.source})
                continue
            families.append(rec.fold or cal.venue_family(rec.venue))
            mine.append(cal.Labelled(id=rec.id, kind=str(rec.kind), facets=rec.facets(embedder),
                                     source=position[rec.source] if rec.source else None, fold="", line=rec.line,
                                     style=rec.style))
        for idea, fold in zip(mine, cal.assign_folds(families)):  # a file's vague ideas go to its own fields
            idea.fold = fold
        ideas += mine
    if len({i.fold for i in ideas}) < 3:
        raise LabelledError(f"{', '.join(p.name for p in paths)}: leave-one-field-out needs ideas from at least three "
                            "fields (source_venue or fold), so that every fit sees two")
    return ideas + cal.method_swaps(ideas), skipped


def fit_shape(st: cal.Stacked, shape: str, target: float, resamples: int = 2000) -> tuple[dict, dict]:
    """The shape's final models (as registry dicts) and its nested out-of-fold figures (overall, per field, per
    style), curves and fold thresholds."""
    probs, fold_t = cal.nested_oof(st, shape, target)
    final, _ = cal.fit_final(st, shape, target)
    outcomes = cal.outcomes(st, probs, fold_t)
    return {m: v.as_dict() for m, v in final.items()}, {
        "hybrid": summarise(outcomes, resamples=resamples),
        "per_field": grouped(st, outcomes, lambda i: i.fold, resamples),
        "per_style": grouped(st, outcomes, lambda i: i.style, resamples),
        "fold_thresholds": fold_t,
        "curves": {d: cal.decision_curve(st, probs, d) for d in ("realised", "direction")}}


def grouped(st: cal.Stacked, outcomes: list, key: Callable, resamples: int) -> dict:
    groups: dict[str, list] = {}
    for idea, o in zip(st.ideas, outcomes):
        if key(idea):
            groups.setdefault(str(key(idea)), []).append(o)
    return {g: summarise(os, resamples=resamples) for g, os in sorted(groups.items())}


def baselines(st: cal.Stacked, dense_theta: float, target: float) -> tuple[dict, dict, dict]:
    """Dense-only (the model's theta and the idea-shaped one) and BM25-only out-of-fold figures."""
    bm25_t = cal.feature_thresholds(st, "bm25_whole", target)
    idea_theta = idea_shaped_theta(st, target)
    figures = {"dense": summarise(cal.feature_baseline(st, "cos_whole", dense_theta)),
               "bm25": summarise(cal.feature_baseline(st, "bm25_whole", bm25_t)),
               "dense_idea_theta": summarise(cal.feature_baseline(st, "cos_whole", idea_theta["per_fold"]))}
    return figures, bm25_t, idea_theta


def idea_shaped_theta(st: cal.Stacked, target: float) -> dict:
    """The dense theta re-derived on idea-shaped pairs: (a) precision >= 0.9 on realised ideas' sources (as
    docs/calibration-minilm.md did with titles), (b) the target false-match rate on the negatives, per fold."""
    realised = [i for i, idea in enumerate(st.ideas) if idea.kind in cal.REALISED_KINDS]
    hits = []
    for i in realised:
        c = st.cands[i]
        order = np.argsort(-c.features["cos_whole"])[:20]
        hits.append([(str(c.positions[j]), float(c.features["cos_whole"][j])) for j in order])
    positives = [{str(st.ideas[i].source)} for i in realised]
    pick = dense_cal.pick_theta(dense_cal.pr_curve(positives, hits), 0.9)
    per_fold = cal.feature_thresholds(st, "cos_whole", target)
    return {"precision_0.9": pick.as_dict() if pick else None, "per_fold": per_fold,
            "theta": round(float(np.median(list(per_fold.values()))), 4), "target_false_match": target}


def headline(summary: dict) -> dict:
    return {k: round(summary[k][m]["value"], 4) for k, m in HEADLINE.items() if k in summary and m in summary[k]}


def fit_hybrid(*, pairs: Sequence[Path], settings: Settings, embedder: Embedder, target: float, registry: Path | None,
               report: Path | None = None, candidates: int = N_CANDIDATES, progress: Callable | None = None) -> dict:
    """Fit, judge and write the registry entry (naming the report that will come with it); returns {registry,
    entry, out_of_fold, skipped, idea_theta, papers_embedded_now, stacks}."""
    corpus = load_corpus(settings, embedder, progress)
    ideas, skipped = labelled_ideas(pairs, embedder, corpus.position)
    # the pair-only features' idf, fixed with the fit: the corpus the ideas are judged against
    lexicon = build_lexicon(f"{r.title or ''}\n{r.abstract or ''}" for r in corpus.rows)
    spread = build_spread(corpus.corpus.matrix)
    path = registry or user_registry(settings.home, embedder.key)

    stacks = {shape: cal.Stacked.of(ideas, cal.build_candidates(
        ideas, corpus.corpus, None, n=candidates, text_only=shape == "text", embedder=embedder, lexicon=lexicon,
                                     spread=spread))
        for shape in SHAPES}
    decisions: dict = {m: {} for m in RULES[RULE]}
    oof: dict = {}
    for shape in SHAPES:
        models, oof[shape] = fit_shape(stacks[shape], shape, target)
        for m in RULES[RULE]:
            decisions[m][shape] = models[m]
    figures, bm25_t, idea_theta = baselines(stacks["facets"], embedder.theta, target)
    oof["facets"].update(figures)
    entry = {
        "model": embedder.key, "model_id": embedder.model_id, "revision": embedder.revision,
        "candidates": candidates, "target_false_match": target, "C": cal.C, "class_weight": cal.CLASS_WEIGHT,
        "floor": cal.FLOOR, "direction_target": cal.DIRECTION_TARGET, "rule": RULE, "decisions": decisions,
        "lexicon": write_lexicon(path.parent, lexicon), "spread": write_spread(path.parent, spread),
        "pairs_file": ", ".join(p.name for p in pairs),
        "ideas": len(ideas),
        "kinds": {k: sum(i.kind == k for i in ideas) for k in sorted({i.kind for i in ideas})},
        "papers": len(corpus.rows), "folds": sorted({i.fold for i in ideas}),
        "baselines": {"bm25_whole_threshold": round(float(np.median(list(bm25_t.values()))), 6),
                      "dense_theta": embedder.theta, "dense_theta_ideas": idea_theta["theta"]},
        "out_of_fold": {shape: {"hybrid": headline(oof[shape]["hybrid"])} for shape in SHAPES},
        "report": str(report) if report else None,
    }
    fitted = [decisions, entry["lexicon"], entry["spread"]]
    digest = hashlib.sha256(json.dumps(fitted, sort_keys=True).encode()).hexdigest()[:8]
    entry["version"] = f"hybrid-{datetime.now(timezone.utc):%Y%m%d}-{digest}"
    return {"registry": str(path), "entry": write_entry(path, embedder.revision, entry), "out_of_fold": oof,
            "skipped": skipped, "idea_theta": idea_theta, "papers_embedded_now": corpus.embedded, "stacks": stacks}

