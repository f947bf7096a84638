"""Test data built on purpose: a store with planted analysis quadrants, an index in the old layout, a corpus dump."""

import json
import shutil
from datetime import date
from pathlib import Path

import faiss
import numpy as np
import orjson
from sqlalchemy import select

from indexing.build import BuildResult, build_index
from indexing.db import migrate, session_scope
from indexing.embedders import Embedder
from indexing.ingest import ingest_path
from indexing.models import Idea, JudgeScore, Match, Paper, Run, Score
from indexing.settings import Settings
from indexing.vectorindex.faiss_index import FILENAME
from indexing.versions import MANIFEST, PAPERS, sha256_file
from tests.helpers import ROOT

SAMPLE_PAPERS = ROOT / "data" / "papers.jsonl"

# per system: how many ideas are planted in each quadrant (default cuts: matched, judge median)
PLANTED = {
    "sys-a": {"true_positive": 5, "hidden_gem": 4, "overhyped": 1, "true_negative": 2},
    "sys-b": {"true_positive": 2, "hidden_gem": 2, "overhyped": 4, "true_negative": 4},
}
HIGH_JUDGE = (8.0, 8.5, 9.0, 9.5)  # all above the pooled median 7
LOW_JUDGE = (4.0, 5.0, 5.5, 6.0)
JUDGE_MEDIAN = 7.0


def analysis_store(home: Path, *, seed: int = 7) -> list[dict]:
    """Two systems with planted quadrant memberships: write runs, ideas, scores, matches and two judges' scores;
    return the planted rows."""
    rng = np.random.default_rng(seed)
    db_path = home / "hindsight.db"
    migrate(db_path)
    planted: list[dict] = []
    with session_scope(db_path) as session:
        for system, quads in PLANTED.items():
            run = Run(system=system, label="r1")
            session.add(run)
            session.flush()
            n = 0
            for quadrant, count in quads.items():
                high_hs = quadrant in ("true_positive", "hidden_gem")
                high_j = quadrant in ("true_positive", "overhyped")
                for _ in range(count):
                    n += 1
                    idea_id = f"{system}-{n:02d}"
                    score = round(float(rng.uniform(0.05, 0.95)), 4) if high_hs else 0.0
                    overall = float(rng.choice(HIGH_JUDGE if high_j else LOW_JUDGE))
                    novelty = round(float(rng.uniform(1, 10)), 2)
                    planted.append(_add_idea(session, run, idea_id, score, high_hs, overall, novelty, rng))
        # one idea the judge never saw and one idea that was never scored: counted, never silently dropped
        run_b = session.query(Run).filter_by(system="sys-b").one()
        planted.append(_add_idea(session, run_b, "sys-b-unjudged", 0.4, True, None, None, rng))
        session.add(Idea(run_id=run_b.id, idea_id="sys-b-unscored", problem="p", method="m"))
    return planted


def _add_idea(session, run, idea_id, score, matched, overall, novelty, rng) -> dict:
    idea = Idea(run_id=run.id, idea_id=idea_id, problem=f"problem of {idea_id}", method=f"method of {idea_id}")
    session.add(idea)
    session.flush()
    s = Score(idea_pk=idea.pk, score=score, matched=matched, model="test-model", theta=0.5, index_version="v1",
              cutoff=date(2023, 6, 1), window_end=date(2025, 12, 31), top_k=3)
    session.add(s)
    session.flush()
    best_title = None
    if matched:
        # the best match is the matched paper of highest impact, not the most similar one
        session.add(Match(score_id=s.id, rank=1, paper_id=f"{idea_id}-p1", title=f"Near {idea_id}", venue="ICLR",
                          year=2024, citations=3, similarity=0.9, impact=score / 2, above_threshold=True))
        session.add(Match(score_id=s.id, rank=2, paper_id=f"{idea_id}-p2", title=f"Best {idea_id}", venue="ICML",
                          year=2024, citations=50, similarity=0.7, impact=score, above_threshold=True))
        best_title = f"Best {idea_id}"
    else:
        session.add(Match(score_id=s.id, rank=1, paper_id=f"{idea_id}-p1", title=f"Nearest {idea_id}", venue=None,
                          year=2024, citations=None, similarity=0.45, impact=0.3, above_threshold=False))
        best_title = f"Nearest {idea_id}"
    if overall is not None:
        session.add(JudgeScore(idea_pk=idea.pk, judge="judge-1", overall=overall, novelty=novelty))
        # a second judge on the same ideas, so the judge choice matters
        session.add(JudgeScore(idea_pk=idea.pk, judge="judge-2", overall=float(rng.integers(1, 11))))
    return {"system": run.system, "run": run.label, "idea_id": idea_id, "idea_pk": idea.pk, "score": score,
            "matched": matched, "overall": overall, "novelty": novelty, "best_title": best_title}


def make_old_version(indexes_dir: Path, version: str, new: str) -> None:
    """Rewrite a version in the layout built before per-request windows: vector ids = paper pks, snapshot in pk
    order, no vector_ids in the manifest."""
    src, dst = indexes_dir / version, indexes_dir / new
    shutil.copytree(src, dst)
    rows = orjson.loads((src / PAPERS).read_bytes())
    index = faiss.read_index(str(src / FILENAME))
    vectors = index.reconstruct_n(0, index.ntotal)
    order = sorted(range(len(rows)), key=lambda i: rows[i]["pk"])
    old_rows = [{k: v for k, v in rows[i].items() if k != "pk"} | {"key": rows[i]["pk"]} for i in order]
    old = faiss.index_factory(vectors.shape[1], "IDMap2,Flat", faiss.METRIC_INNER_PRODUCT)
    old.add_with_ids(vectors[order], np.array([rows[i]["pk"] for i in order], dtype=np.int64))
    faiss.write_index(old, str(dst / FILENAME))
    (dst / PAPERS).write_bytes(orjson.dumps(old_rows))
    manifest = json.loads((src / MANIFEST).read_text())
    manifest.pop("vector_ids")
    # versions of that time had no lexical index nor matcher block either
    for name in (manifest.pop("lexical", None) or {}).get("files", []):
        (dst / name).unlink(missing_ok=True)
        manifest["checksums"].pop(name, None)
    manifest.pop("matcher", None)
    for key in ("citation_normalisation", "papers"):
        manifest["impact"].pop(key)
    manifest["version"] = new
    manifest["checksums"] = {name: sha256_file(dst / name) for name in manifest["checksums"]}
    (dst / MANIFEST).write_text(json.dumps(manifest))


def corpus(settings: Settings) -> dict[str, tuple]:
    """Every stored paper by id: the fields a fetch writes."""
    with session_scope(settings.db_path) as s:
        return {p.paper_id: (p.title, p.abstract, p.publication_date, p.date_rule, p.venue, p.citation_count, p.doi)
                for p in s.scalars(select(Paper))}


def sample_version(home: Path, embedder: Embedder, n: int) -> BuildResult:
    """The first n bundled sample papers ingested under home and one version built over all time (the default
    matcher)."""
    settings = Settings(home=home)
    migrate(settings.db_path)
    path = home / "papers.jsonl"
    path.write_text("\n".join(SAMPLE_PAPERS.read_text().splitlines()[:n]) + "\n")
    ingest_path(path, db_path=settings.db_path)
    return build_index(settings, embedder=embedder, cutoff=date(2000, 1, 1), until=date(2100, 12, 31))


def labels_store(home: Path, *, per_system: int = 40, seed: int = 3) -> dict:
    """Two systems (run label "r1") of scored ideas with five stored candidates each (papers in the store) and a
    planted truth per idea: which candidate a reader would call realised or direction (or none). The matcher's
    calls agree with the truth on most ideas, not all. Returns {idea_id: {"system", "realised", "direction",
    "papers": [...], "truth": {paper: label}}} and the extra paper "outside-1" no idea lists."""
    rng = np.random.default_rng(seed)
    db_path = home / "hindsight.db"
    migrate(db_path)
    planted: dict = {}
    with session_scope(db_path) as session:
        def paper(pid: str) -> None:
            session.add(Paper(paper_id=pid, source="test", title=f"Paper {pid}", abstract=f"Abstract of {pid}.",
                              publication_date=date(2024, 7, 1), date_rule="exact", year=2024, venue="ACL",
                              citation_count=3, title_key=f"paper {pid} 2024", content_hash=pid))
        paper("outside-1")
        for system, p_real, p_dir in (("sys-a", 0.3, 0.5), ("sys-b", 0.15, 0.3)):
            run = Run(system=system, label="r1")
            session.add(run)
            session.flush()
            for i in range(per_system):
                idea_id = f"{system}-{i:03d}"
                idea = Idea(run_id=run.id, idea_id=idea_id, problem=f"Problem {idea_id}", method=f"Method {idea_id}",
                            title=f"Idea {idea_id}")
                session.add(idea)
                session.flush()
                u = rng.random()
                kind = "realised" if u < p_real else "direction" if u < p_dir else "none"
                truth = {f"{idea_id}-c{r}": "none" for r in range(1, 6)}
                if kind != "none":
                    truth[f"{idea_id}-c{int(rng.integers(1, 4))}"] = kind
                right = rng.random() < 0.85  # the matcher agrees with the truth on most ideas
                called = {p: (lab if right else ("none" if lab != "none" else "direction" if r == 1 else "none"))
                          for r, (p, lab) in enumerate(truth.items(), 1)}
                impact = round(float(rng.uniform(0.1, 0.9)), 3)
                s = Score(idea_pk=idea.pk, score=impact if "realised" in called.values() else 0.0,
                          matched="realised" in called.values(), model="test-model", theta=0.5, index_version="v1",
                          cutoff=date(2023, 6, 1), window_end=date(2025, 12, 31), top_k=5, matcher="hybrid",
                          n_direction_matches=sum(v != "none" for v in called.values()))
                session.add(s)
                session.flush()
                for r, (pid, lab) in enumerate(called.items(), 1):
                    paper(pid)
                    session.add(Match(score_id=s.id, rank=r, paper_id=pid, title=f"Paper {pid}", venue="ACL",
                                      year=2024, citations=3, similarity=round(0.9 - 0.05 * r, 3), impact=impact,
                                      above_threshold=lab == "realised", realised=lab == "realised",
                                      direction=lab != "none", p_realised=0.9 if lab == "realised" else 0.1,
                                      p_direction=0.9 if lab != "none" else 0.1,
                                      evidence_sentence=f"Evidence sentence of {pid}."))
                planted[idea_id] = {"system": system, "realised": kind == "realised",
                                    "direction": kind != "none", "impact": impact, "truth": truth}
    return planted


# a tiny random GGUF chat model for the llama.cpp runtime (the verifier's and the judge's tests)

QWEN_LIKE_TEMPLATE = (  # the shape of Qwen2.5's template without its tool branches
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\nYou are Qwen.<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}{%- if message.role == 'user' %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")


def _byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode table: the 256 symbols a byte-level BPE vocabulary starts from."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    return [chr(b) if b in keep else chr(next(extra)) for b in range(256)]


def write_tiny_gguf(path: Path, *, words: tuple[str, ...] = ("Yes", "No", "yes", "no"), template: str | None = None,
                    seed: int = 0) -> Path:
    """A 2-layer qwen2 model with random f32 weights and a byte-level BPE vocabulary (every byte, `words` as single
    tokens through their merges, and the ChatML control tokens)."""
    import gguf

    tokens, merges = _byte_symbols(), []
    for word in words:
        cur = word[0]
        for ch in word[1:]:
            merges.append(f"{cur} {ch}")
            cur += ch
            if cur not in tokens:
                tokens.append(cur)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [gguf.TokenType.NORMAL] * len(tokens) + [gguf.TokenType.CONTROL] * len(specials)
    tokens += specials
    n_vocab, n_embd, n_head, n_head_kv, n_ff, n_layer = len(tokens), 64, 4, 2, 128, 2
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_name("tiny")
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index("<|endoftext|>"))
    w.add_eos_token_id(tokens.index("<|im_end|>"))
    w.add_add_bos_token(False)
    if template is not None:
        w.add_chat_template(template)
    rng = np.random.default_rng(seed)

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    kv = n_embd // n_head * n_head_kv
    w.add_tensor("token_embd.weight", rand(n_vocab, n_embd))  # numpy shapes: ggml's dimensions reversed
    w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor("output.weight", rand(n_vocab, n_embd))
    for i in range(n_layer):
        for name, array in {"attn_norm.weight": np.ones(n_embd, np.float32), "attn_q.weight": rand(n_embd, n_embd),
                            "attn_q.bias": rand(n_embd), "attn_k.weight": rand(kv, n_embd), "attn_k.bias": rand(kv),
                            "attn_v.weight": rand(kv, n_embd), "attn_v.bias": rand(kv),
                            "attn_output.weight": rand(n_embd, n_embd), "ffn_norm.weight": np.ones(n_embd, np.float32),
                            "ffn_gate.weight": rand(n_ff, n_embd), "ffn_up.weight": rand(n_ff, n_embd),
                            "ffn_down.weight": rand(n_embd, n_ff)}.items():
            w.add_tensor(f"blk.{i}.{name}", array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


PRIOR_ART_CUTOFF = "2023-06-01"
# ideas written from sample papers (their own title and abstract), each planted on a side of PRIOR_ART_CUTOFF
PRIOR_ART_IDEAS = {"already": "hs-0055",  # 2022-06-14: published before the cutoff only
                   "recalled": "hs-0039",  # 2022-03-28, and a restatement of it planted in 2024
                   "anticipated": "hs-0010"}  # 2023-06-05: after the cutoff only
VAGUE_IDEA = "Make machine learning models better by training them on more and cleaner data."


def prior_art_version(home: Path, embedder: Embedder, n: int = 60) -> dict[str, dict]:
    """The first n sample papers and a 2024 restatement of hs-0039, ingested under home, in one version built over
    2020-01-01..2026-12-31 (papers on both sides of PRIOR_ART_CUTOFF); returns the planted ideas (HindSight JSONL
    records) by the class they have at realised level when scored at PRIOR_ART_CUTOFF, and a vague one."""
    settings = Settings(home=home)
    migrate(settings.db_path)
    rows = [json.loads(line) for line in SAMPLE_PAPERS.read_text().splitlines()[:n]]
    by_id = {r["id"]: r for r in rows}
    later = {k: v for k, v in by_id["hs-0039"].items() if k not in ("doi", "arxiv_id")} | {
        "id": "planted-0039-2024", "publication_date": "2024-05-02", "citation_count": 4,
        "title": "Learning Latent Plans from Play Data, Revisited"}  # its own paper, not a duplicate
    path = home / "papers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, later]))
    ingest_path(path, db_path=settings.db_path)
    build_index(settings, embedder=embedder, cutoff=date(2020, 1, 1), until=date(2026, 12, 31))
    ideas = {cls: {"id": cls, "text": f"{by_id[pid]['title']}. {by_id[pid]['abstract']}"}
             for cls, pid in PRIOR_ART_IDEAS.items()}
    return {"already_published": ideas["already"], "recalled": ideas["recalled"],
            "anticipated": ideas["anticipated"], "unrealised": {"id": "vague", "text": VAGUE_IDEA}}


def demo_home(home: Path) -> dict[str, int]:
    """A home as ./scripts/demo.sh leaves it, through the CLI: the sample corpus and index, runs own-cutoff (each
    system at its knowledge cutoff) and demo (both at 2024-06-01) with the judges' scores, plus a reader's labels of
    the demo ideas' first three candidates (the matcher's call, some direction calls added) and a draw of 8 per
    system. Returns the run ids by "system/run"."""
    import sqlite3

    from tests.helpers import run_cli

    steps = [("ingest", str(SAMPLE_PAPERS)), ("index", "build"),
             ("system", "set", "rag-generator", "--knowledge-cutoff", "2023-12-01"),
             ("system", "set", "vanilla-generator", "--knowledge-cutoff", "2024-06-01"),
             ("score", str(ROOT / "data/ideas/rag.jsonl"), "--system", "rag-generator", "--run", "own-cutoff"),
             ("score", str(ROOT / "data/ideas/vanilla.jsonl"), "--system", "vanilla-generator", "--run", "own-cutoff"),
             ("score", str(ROOT / "data/ideas/rag.jsonl"), "--system", "rag-generator", "--run", "demo", "--cutoff",
              "2024-06-01"),
             ("score", str(ROOT / "data/ideas/vanilla.jsonl"), "--system", "vanilla-generator", "--run", "demo",
              "--cutoff", "2024-06-01"),
             ("judge", "import", str(ROOT / "data/judge_scores.csv"), "--run", "demo")]
    for args in steps:
        out = run_cli(home, *args)
        assert out.returncode == 0, (args, out.stderr)
    with sqlite3.connect(home / "hindsight.db") as con:
        rows = con.execute(
            "SELECT r.system, r.label, i.idea_id, m.paper_id, m.above_threshold, m.rank FROM matches m "
            "JOIN scores s ON s.id = m.score_id JOIN ideas i ON i.pk = s.idea_pk JOIN runs r ON r.id = i.run_id "
            "WHERE r.label = 'demo' AND m.rank <= 3 ORDER BY i.pk, m.rank").fetchall()
        runs = {f"{s}/{label}": rid for rid, s, label in con.execute("SELECT id, system, label FROM runs")}
    labels = home / "labels.jsonl"
    labels.write_text("".join(json.dumps({
        "run": run, "system": system, "idea_id": idea, "paper_id": paper, "annotator": "reader",
        "label": "realised" if above else "direction" if rank == 1 and n % 4 == 0 else "none"}) + "\n"
        for n, (system, run, idea, paper, above, rank) in enumerate(rows)))
    for args in (("label", "import", str(labels)), ("label", "draw", "--run", "demo", "--n", "8", "--seed", "1")):
        out = run_cli(home, *args)
        assert out.returncode == 0, (args, out.stderr)
    return runs
