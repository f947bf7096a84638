"""The local verifier's cost: load time, RSS and seconds per pair (both questions) with prefix sharing against
evaluating every prompt from its first token (the baseline, measured in the same run), and against llama.cpp state
save/load; short ideas (the dev set) and long proposals (AI-Researcher plans with COLING 2025 abstracts); the
projected time of the 213 AI-Researcher ideas at K papers each.

    .venv/bin/python bench/verifier_local.py [--model FILE] [--ideas 3] [--k 5] [--threads 0] [--n-batch 512]
        [--flash-attn] [--type-k q8_0] [--modes shared,state,unshared] [--json]

Needs the `verifier` extra (or --model) and ../shared/data.
"""

import argparse
import json
import os
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from indexing.matcher.verifier import prompts  # noqa: E402
from indexing.matcher.verifier.base import Paper, Verdict  # noqa: E402
from indexing.matcher.verifier.local import LocalVerifier  # noqa: E402
from indexing.llm.model_files import file_sha256, model_file  # noqa: E402
from indexing.settings import Settings  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
AI_RESEARCHER_IDEAS = 213
WORD = re.compile(r"[a-z]{4,}")


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set of this process, MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def short_ideas(n: int, k: int) -> list[tuple[str, list[Paper]]]:
    """Dev-set paraphrases, each with its source paper and k-1 other papers of the lists (seeded)."""
    papers = {p["id"]: Paper(p["id"], p["title"], p["abstract"])
              for f in sorted((SHARED / "paperlists").glob("*/*.json")) for p in json.loads(f.read_text())}
    ideas = [json.loads(line) for line in (SHARED / "ideas" / "dev_ideas.jsonl").read_text().splitlines()]
    picked = [i for i in ideas if i["kind"] == "paraphrase" and i["source_paper_id"] in papers][:n]
    rng, pool = random.Random(0), sorted(papers)
    return [(prompts.idea_text(i["problem"], i["method"], None),
             [papers[i["source_paper_id"]]] + [papers[p] for p in rng.sample(pool, k - 1)]) for i in picked]


def long_ideas(n: int, k: int) -> list[tuple[str, list[Paper]]]:
    """AI-Researcher proposals (as `hindsight score` reads them), each with the k COLING 2025 abstracts sharing the
    most words with it."""
    from service.ideas.reader import read_path

    plans = sorted((SHARED / "generators" / "ai-researcher" / "experiment_plans").glob("*/*.json"))
    step = max(1, len(plans) // n)
    corpus = [Paper(str(i), p["title"], p["abstract"]) for i, p in enumerate(
        json.loads((SHARED / "generators" / "corpus" / "coling2025.json").read_text())) if p.get("abstract")]
    words = [set(WORD.findall((p.title + " " + p.abstract).lower())) for p in corpus]
    out = []
    for plan in plans[::step][:n]:
        idea = read_path(plan).ideas[0].idea
        text = prompts.idea_text(idea.problem, idea.method, idea.text)
        mine = set(WORD.findall(text.lower()))
        ranked = sorted(range(len(corpus)), key=lambda j: -len(mine & words[j]))[:k]
        out.append((text, [corpus[j] for j in ranked]))
    return out


def judge_with_states(v: LocalVerifier, idea: str, papers: list[Paper], system_state: object) -> list[Verdict]:
    """judge's evaluation order, the prefixes kept as llama.cpp state copies (save_state/load_state) instead of
    cutting the KV cache back."""
    llm = v._llm
    llm.load_state(system_state)  # type: ignore[arg-type]
    v._evaluated = list(v._system)
    base = v._idea(idea)
    v._extend(base[len(v._system):])
    idea_state = llm.save_state()
    questions = {q: v._question(q) for q in prompts.QUESTIONS}
    out = []
    for paper in papers:
        llm.load_state(idea_state)
        v._evaluated = list(base)
        block = v._paper(paper)
        v._extend(block)
        paper_state = llm.save_state()
        p = {}
        for q, tokens in questions.items():
            llm.load_state(paper_state)
            v._evaluated = base + block
            v._extend(tokens)
            p[q] = v._p_yes()
        out.append(Verdict(p_direction=p["direction"], p_realised=p["realised"], source="logprobs"))
    return out


def run_set(v: LocalVerifier, name: str, ideas: list[tuple[str, list[Paper]]], modes: list[str]) -> dict:
    pairs = sum(len(p) for _, p in ideas)
    tokens = [len(v.prompt(idea, p, q)) for idea, ps in ideas for p in ps for q in prompts.QUESTIONS]
    row: dict = {"set": name, "ideas": len(ideas), "pairs": pairs, "mean_prompt_tokens": sum(tokens) / len(tokens),
                 "unshared_tokens_per_pair": sum(tokens) / pairs}  # what evaluating every prompt whole costs
    answers = {}
    for mode in modes:
        v._cut(0)  # every mode starts from an empty cache and evaluates the system turn as part of its time
        t, before = time.perf_counter(), v.tokens_evaluated
        if mode == "shared":
            answers[mode] = [x for idea, ps in ideas for x in v.judge(idea, ps)]
        elif mode == "state":
            v._extend(list(v._system))
            system_state = v._llm.save_state()
            answers[mode] = [x for idea, ps in ideas for x in judge_with_states(v, idea, ps, system_state)]
        else:
            answers[mode] = [x for idea, ps in ideas for x in v.judge_unshared(idea, ps)]
        row[f"{mode}_s_per_pair"] = (time.perf_counter() - t) / pairs
        row[f"{mode}_tokens_per_pair"] = (v.tokens_evaluated - before) / pairs
        print(f"  {name} {mode}: {row[f'{mode}_s_per_pair']:.2f} s/pair, {row[f'{mode}_tokens_per_pair']:.0f} tokens "
              f"evaluated per pair, load average {os.getloadavg()[0]:.1f}", flush=True)
    for mode in modes:
        if mode != "unshared" and "unshared" in modes:
            row[f"{mode}_speedup"] = row["unshared_s_per_pair"] / row[f"{mode}_s_per_pair"]
            row[f"{mode}_max_diff"] = max(abs(a - b) for x, y in zip(answers[mode], answers["unshared"])
                                          for a, b in ((x.p_direction, y.p_direction), (x.p_realised, y.p_realised)))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, help="a GGUF file (default: the packaged model, joined under HINDSIGHT_HOME)")
    ap.add_argument("--ideas", type=int, default=3)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--n-batch", type=int, default=512)
    ap.add_argument("--flash-attn", action="store_true")
    ap.add_argument("--type-k", choices=["f16", "q8_0"], default="f16", help="KV cache type (q8_0 needs flash-attn)")
    ap.add_argument("--sets", default="short,long")
    ap.add_argument("--modes", default="shared,state,unshared", help="unshared is the baseline of the ratios")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"{SHARED} is absent")
    if args.model:
        path, sha = args.model, file_sha256(args.model)
    else:
        path, sha = model_file(Settings())
    runtime: dict = {"n_batch": args.n_batch, "flash_attn": args.flash_attn}
    if args.type_k == "q8_0":
        runtime |= {"type_k": 8, "type_v": 8}  # GGML_TYPE_Q8_0
    load = os.getloadavg()
    t = time.perf_counter()
    v = LocalVerifier(path, sha256=sha, threads=args.threads, ctx=Settings().llm.verifier_ctx, **runtime)
    result: dict = {"model": path.name, "load_s": time.perf_counter() - t, "rss_mb_after_load": rss_mb()[0],
                    "threads": args.threads or len(os.sched_getaffinity(0)), **runtime, "type_k": args.type_k,
                    "loadavg_before": load}
    print(f"load {result['load_s']:.2f} s, RSS {result['rss_mb_after_load']:.0f} MB, load average {load}", flush=True)
    makers = {"short": short_ideas, "long": long_ideas}
    modes = args.modes.split(",")
    result["sets"] = [run_set(v, name, makers[name](args.ideas, args.k), modes) for name in args.sets.split(",")]
    result["rss_mb_peak"] = rss_mb()[1]
    result["loadavg_after"] = os.getloadavg()
    for row in result["sets"]:
        ratios = ", ".join(f"{m} {row[f'{m}_speedup']:.2f}x (max |dp| {row[f'{m}_max_diff']:.3f})"
                           for m in modes if f"{m}_speedup" in row)
        print(f"{row['set']}: {row['pairs']} pairs, {row['mean_prompt_tokens']:.0f} tokens per prompt; "
              + ", ".join(f"{m} {row[f'{m}_s_per_pair']:.2f} s/pair" for m in modes)
              + (f"; against unshared: {ratios}" if ratios else "")
              + "; tokens evaluated per pair: " + ", ".join(
                  f"{m} {row[f'{m}_tokens_per_pair']:.0f}" for m in modes if m != "unshared")
              + f", unshared {row['unshared_tokens_per_pair']:.0f}")
    long = next((r for r in result["sets"] if r["set"] == "long"), None)
    if long is not None and "shared_s_per_pair" in long:
        minutes = long["shared_s_per_pair"] * args.k * AI_RESEARCHER_IDEAS / 60
        result["projected_ai_researcher_minutes"] = minutes
        print(f"projected: {AI_RESEARCHER_IDEAS} AI-Researcher ideas x {args.k} papers = {minutes:.0f} min "
              f"(goal 30), peak RSS {result['rss_mb_peak']:.0f} MB, load average {result['loadavg_after']}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
