"""The hybrid matcher's out-of-fold figures on the shared dev set (with its method swaps), recomputed and held to
the recorded ones: a change that makes the decisions worse fails here.

The dev set's four venue families are the fields (leave one out, every fit sees three). Paper vectors come from
an embedding cache kept between runs (HINDSIGHT_TEST_CACHE, default ~/.cache/hindsight-tests), so only the first
run embeds the 3,136 papers. Skipped without ../shared/data.
"""

import os
from pathlib import Path

import pytest

from indexing.db import migrate
from indexing.embedders import load_embedder
from indexing.ingest import ingest_path
from indexing.matcher import calibrate as cal
from indexing.matcher import fitting
from indexing.matcher.reference import build_lexicon, build_spread
from indexing.settings import Settings
from tests.helpers import SHARED_DATA

DEV = SHARED_DATA / "ideas" / "dev_ideas.jsonl"
PAPERLISTS = sorted((SHARED_DATA / "paperlists").glob("*/*.json"))
pytestmark = [pytest.mark.shared, pytest.mark.server, pytest.mark.skipif(not DEV.exists() or not PAPERLISTS,
                                                     reason="../shared/data (dev ideas, paperlists) is absent")]

# nested leave-one-field-out on the dev set alone, pair-only features (openvino-int8 f32 MiniLM, 2026-12-06; the
# window-relative fit of 2026-12-01 had paraphrase 0.925, loose 0.55, direction 0.95 / 0.65 / 0.80 / 0.76, and no
# method swap or vague idea realised); (kind, measure): recorded value
RECORDED = {
    ("paraphrase", "source_realised"): 0.90, ("loose", "source_realised"): 0.70,
    ("paraphrase", "source_direction"): 0.95, ("loose", "source_direction"): 0.85,
    ("hard_negative", "source_direction"): 0.85, ("method_swap", "source_direction"): 0.78,
    ("paraphrase", "recall@1"): 1.0, ("loose", "recall@1"): 1.0,
}
# at most these (anything realised): one method swap of 60 and one vague idea of 20
CEILINGS = {("hard_negative", "any_realised"): 0.0, ("method_swap", "any_realised"): 1 / 60,
            ("vague", "any_realised"): 0.05}


@pytest.fixture(scope="module")
def dev_stack():
    home = Path(os.environ.get("HINDSIGHT_TEST_CACHE", Path.home() / ".cache" / "hindsight-tests")) / "dev"
    settings = Settings(home=home)
    migrate(settings.db_path)
    for path in PAPERLISTS:  # unchanged papers are skipped: the second run reads only
        ingest_path(path, db_path=settings.db_path)
    embedder = load_embedder(settings.index.model, settings)
    corpus = fitting.load_corpus(settings, embedder)
    ideas, skipped = fitting.labelled_ideas([DEV], embedder, corpus.position)
    assert not skipped and sum(i.kind == "method_swap" for i in ideas) == 60
    encode = lambda texts: embedder.encode(texts, batch_size=settings.index.batch_size)  # noqa: E731
    # the fit's reference, as hindsight calibrate makes it: the corpus's lexicon and vector spread
    lexicon = build_lexicon(f"{r.title or ''}\n{r.abstract or ''}" for r in corpus.rows)
    return cal.Stacked.of(ideas, cal.build_candidates(ideas, corpus.corpus, encode, n=fitting.N_CANDIDATES,
                                                      lexicon=lexicon, spread=build_spread(corpus.corpus.matrix)))


def test_out_of_fold_figures_hold_on_the_dev_set(dev_stack):
    _, oof = fitting.fit_shape(dev_stack, "facets", cal.TARGET_FALSE_MATCH, resamples=100)
    got = oof["hybrid"]
    n = {k: v["recall@1"]["n"] if "recall@1" in v else v["any_realised"]["n"] for k, v in got.items()}
    for (kind, measure), want in RECORDED.items():
        assert got[kind][measure]["value"] >= want - 1e-9, (kind, measure, got[kind][measure]["value"], want, n[kind])
    for (kind, measure), most in CEILINGS.items():
        assert got[kind][measure]["value"] <= most + 1e-9, (kind, measure, got[kind][measure]["value"], most)
