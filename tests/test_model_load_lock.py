"""Model construction is serialised per process: threads that load MiniLM for the first time together all get
the one copy (without the lock, concurrent SentenceTransformer constructions fail with "Cannot copy out of meta
tensor; no data!")."""

import threading

from indexing.embedders import minilm


def test_first_loads_in_parallel_threads_share_one_copy():
    for _ in range(3):
        minilm._load.cache_clear()
        go = threading.Barrier(3)
        models, errors = [], []

        def load() -> None:
            go.wait()
            try:
                models.append(minilm.MiniLMEmbedder().model)
            except Exception as exc:  # collected: the assertion below names it
                errors.append(repr(exc)[:200])

        threads = [threading.Thread(target=load) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert len(models) == 3 and all(m is models[0] for m in models)
