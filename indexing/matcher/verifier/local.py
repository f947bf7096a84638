"""The local verifier: a GGUF chat model (by default the packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M) run in process
by llama.cpp (llama-cpp-python).

Prefixes are shared through llama.cpp's KV cache: the system turn (with both definitions) is evaluated once per
load, an idea once for all its papers, a paper once for both questions; going back to a prefix drops the cache past
it (no state copies). Each question reads the next-token distribution once: P(Yes) / (P(Yes) + P(No)).
"""

import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexing.matcher.verifier import prompts
from indexing.matcher.verifier.base import Paper, Verdict, VerifierUnavailable
from indexing.matcher.verifier.model_files import model_file
from indexing.settings import Settings

# ChatML, the template of the Qwen2.5 family (the packaged model's GGUF carries the same one)
TURN = "<|im_start|>{role}\n{content}<|im_end|>\n"
ASSISTANT = "<|im_start|>assistant\n"


class LocalVerifier:
    name = "local"

    def __init__(self, path: Path, *, sha256: str, threads: int = 0, ctx: int = 4096) -> None:
        from llama_cpp import Llama  # the `verifier` extra; imported here so the rest never needs it

        self.path = path
        self.revision = f"local:{sha256[:12]}:{prompts.PROMPT_VERSION}"
        self._llm = Llama(model_path=str(path), n_ctx=ctx, n_batch=512, n_threads=threads or os.cpu_count() or 1,
                          logits_all=False, verbose=False)
        self._lock = threading.Lock()
        self._yes = self._token_ids(prompts.YES)
        self._no = self._token_ids(prompts.NO)
        if not self._yes or not self._no:
            raise VerifierUnavailable(f"{path}: the model's vocabulary has no single-token Yes/No")
        self._system = self._tokens(TURN.format(role="system", content=prompts.SYSTEM) + "<|im_start|>user\n")
        self._evaluated: list[int] = []  # the tokens whose keys and values the cache holds, in order

    @classmethod
    def from_settings(cls, settings: Settings) -> "LocalVerifier":
        path, sha = model_file(settings)
        return cls(path, sha256=sha, threads=settings.verifier_threads, ctx=settings.verifier_ctx)

    def _tokens(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def _token_ids(self, words: Sequence[str]) -> list[int]:
        ids = set()
        for w in words:
            t = self._llm.tokenize(w.encode("utf-8"), add_bos=False, special=False)
            if len(t) == 1:
                ids.add(t[0])
        return sorted(ids)

    def _extend(self, tokens: list[int]) -> None:
        """Evaluate tokens on top of what the cache holds (which the caller has cut to the shared prefix)."""
        if len(self._evaluated) + len(tokens) > self._llm.n_ctx():
            raise VerifierUnavailable(f"an idea and a paper need {len(self._evaluated) + len(tokens)} tokens, past "
                                      f"the verifier's context of {self._llm.n_ctx()} (HINDSIGHT_VERIFIER_CTX)")
        self._llm.eval(tokens)
        self._evaluated += tokens

    def _cut(self, n: int) -> None:
        """Drop the cache past the first n tokens."""
        if len(self._evaluated) > n:
            self._llm._ctx.kv_cache_seq_rm(-1, n, -1)
            self._llm.n_tokens = n
            del self._evaluated[n:]

    def _p_yes(self) -> float:
        logits = np.ctypeslib.as_array(self._llm._ctx.get_logits(), shape=(self._llm.n_vocab(),))
        top = float(logits.max())
        yes = sum(math.exp(float(logits[t]) - top) for t in self._yes)
        no = sum(math.exp(float(logits[t]) - top) for t in self._no)
        return yes / (yes + no)

    def _at(self, prefix: list[int]) -> None:
        """Make the cache hold `prefix`, keeping as much of what it holds as is shared; the caller evaluates more
        tokens next, so the logits of the prefix's last token are never read."""
        shared = 0
        for a, b in zip(self._evaluated, prefix):
            if a != b:
                break
            shared += 1
        self._cut(shared)
        if shared < len(prefix):
            self._extend(prefix[shared:])

    def judge(self, idea: str, papers: Sequence[Paper]) -> list[Verdict]:
        with self._lock:
            base = self._system + self._tokens(prompts.idea_block(idea) + "\n\n")
            out = []
            for paper in papers:
                with_paper = base + self._tokens(prompts.paper_block(paper.title, paper.abstract) + "\n\n")
                p = {}
                for question, text in prompts.QUESTIONS.items():
                    self._at(with_paper)
                    self._extend(self._tokens(text + "<|im_end|>\n" + ASSISTANT))
                    p[question] = self._p_yes()
                out.append(Verdict(p_direction=p["direction"], p_realised=p["realised"], source="logprobs"))
            return out
