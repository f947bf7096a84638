"""The per-request speed-ups change no answer: the same ideas scored through the fast paths (a private Rust
tokenizer for token counts, cached paper stems for evidence, one-thread FAISS searches and one-thread BLAS)
and through the plain computations they replace give identical matches, probabilities, warnings and evidence."""

import contextlib
import copy
import json
import threading

import faiss
import pytest
import torch

from indexing.matcher import evidence as evidence_module
from indexing.matcher import ranges
from indexing.settings import Settings
from indexing.vectorindex import faiss_index
from indexing.versions import load_version
from service.scoring.answer import score_ideas
from service.schemas import IdeaIn
from service.threads import apply_scoring_threads
from tests.factories import SAMPLE_PAPERS as PAPERS
from tests.factories import sample_version
from tests.helpers import ROOT

IDEAS = ROOT / "data" / "ideas" / "sample.jsonl"
LONG = " ".join(f"Step {i}: we retrieve passages, rank them with a learned scorer and answer." for i in range(40))


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, minilm):
    """120 sample papers in one hybrid version."""
    home = tmp_path_factory.mktemp("speed") / "home"
    built = sample_version(home, minilm, 120)
    return load_version(Settings(home=home).indexes_dir, built.version)


def ideas() -> list[IdeaIn]:
    """The sample ideas, ideas restating indexed papers, and every out-of-range shape (long, short, German,
    problem only, method only, free text)."""
    out = [IdeaIn(**json.loads(line)) for line in IDEAS.read_text().splitlines()]
    for i, line in enumerate(PAPERS.read_text().splitlines()[:12]):
        p = json.loads(line)
        first, *rest = p["abstract"].split(". ")
        out.append(IdeaIn(id=f"paper-{i}", problem=p["title"], method=". ".join(rest) or first))
    out += [IdeaIn(id="long", problem="Open-domain question answering over long documents.", method=LONG),
            IdeaIn(id="long-text", text=LONG),
            IdeaIn(id="short", problem="Graph learning", method="Transformers"),
            IdeaIn(id="german", problem="Große Sprachmodelle erfinden Fakten in langen Antworten und niemand merkt es.",
                   method="Wir prüfen jede Aussage gegen abgerufene Dokumente und schreiben falsche Sätze neu."),
            IdeaIn(id="problem-only", problem="Robots fail to grasp transparent objects from depth images."),
            IdeaIn(id="method-only", method="Contrastive pre-training of a policy on unlabelled video clips.")]
    return out


def answers(loaded, embedder, window=None) -> list[dict]:
    out = score_ideas(ideas(), loaded=loaded, embedder=embedder, top_k=20, matcher="hybrid",
                      window=window)
    return [a.model_dump() for a in out]


@contextlib.contextmanager
def torch_threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def plain_counter(tokenizer):
    """The computation the Rust copy replaces: the tokenizer's own call without truncation, on a deep copy."""
    private, lock = copy.deepcopy(tokenizer), threading.Lock()

    def count(texts: list[str]) -> list[int]:
        with lock:
            rows = private(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        return [len(r) for r in rows]
    return count


# 40 ideas scored five ways (about 25 s): the fast step's slowest test, so CI's server step runs it
@pytest.mark.server
def test_fast_paths_answer_as_the_plain_computations(loaded, minilm, monkeypatch):
    dates = sorted(set(loaded.table.dates))
    narrow = loaded.resolve_window(cutoff=dates[len(dates) // 2])  # a window's own BM25 statistics too
    assert 0 < narrow.papers < len(loaded.rows)
    threads = torch.get_num_threads()
    try:
        apply_scoring_threads(1)
        fast_cold = answers(loaded, minilm)
        fast_warm = answers(loaded, minilm)  # the caches filled by the first pass
        fast_window = answers(loaded, minilm, narrow)
    finally:
        torch.set_num_threads(threads)
    # every fast path swapped for the plain computation; torch stays on one thread: an fp32 text encoded at its own
    # length (encode_facets) differs in the 7th decimal between one and two threads (bf16 and batches: bit for bit)
    with monkeypatch.context() as m, torch_threads(1):
        m.setattr(ranges, "_counter", plain_counter)
        m.setattr(evidence_module, "paper_stems", evidence_module.paper_stems.__wrapped__)
        m.setattr(evidence_module, "idea_stems", evidence_module.idea_stems.__wrapped__)
        m.setattr(faiss_index, "FEW_QUERIES", 0)  # every search on FAISS's default threads
        reference = answers(loaded, minilm)
        reference_window = answers(loaded, minilm, narrow)
    assert fast_cold == reference
    assert fast_warm == reference
    assert fast_window == reference_window
    # the fixture exercises what it claims: decisions of both kinds, warnings, evidence
    assert any(m["realised"] for a in reference for m in a["matches"])
    assert any(m["direction"] and not m["realised"] for a in reference for m in a["matches"])
    warned = {a["id"] for a in reference if a["warnings"]}
    assert {"long", "long-text", "short", "german", "problem-only", "method-only"} <= warned
    assert all(m["evidence"] and m["evidence"]["sentence"] for m in reference[0]["matches"])


def test_token_counts_equal_the_tokenizers_own(minilm):
    texts = [LONG, "", "Ünïcödé 中文 测试 " * 40, "short", LONG[:300]]
    fast = ranges._counter(minilm.model.tokenizer)(texts)
    assert fast == plain_counter(minilm.model.tokenizer)(texts)
    assert fast[0] > minilm.max_tokens  # untruncated


def test_one_thread_search_is_the_calling_threads_alone():
    faiss.omp_set_num_threads(2)
    seen = {}

    def request() -> None:
        with faiss_index.omp_threads(1):
            seen["inside"] = faiss.omp_get_max_threads()
        seen["after"] = faiss.omp_get_max_threads()

    worker = threading.Thread(target=request)
    with faiss_index.omp_threads(None):
        worker.start()
        worker.join()
    assert seen == {"inside": 1, "after": 2}
    assert faiss.omp_get_max_threads() == 2  # other threads (a build beside the request) keep theirs


def test_an_ideas_vectors_are_its_texts_alone(minilm):
    """Each facet is encoded at its own length: an idea's vectors do not depend on the ideas scored beside it (a
    batch padded to its longest text moved them), and encoding it alone equals encoding each text on its own."""
    from indexing.matcher.decide import embed
    from service.scoring.answer import idea_facets

    batch = idea_facets(minilm, ideas())
    alone = [embed(minilm, [f], "hybrid")[0] for f in batch[:8]]
    together = embed(minilm, batch, "hybrid")
    for a, t in zip(alone, together):
        assert a.keys() == t.keys() and all((a[k] == t[k]).all() for k in a)
    single = batch[0]
    one_by_one = {f: minilm.encode([text])[0] for f, text in single.texts().items()}
    assert all((alone[0][f] == one_by_one[f]).all() for f in one_by_one)
    assert embed(minilm, batch[:3], "dense")[1]["whole"].tolist() == minilm.encode([batch[1].whole])[0].tolist()
