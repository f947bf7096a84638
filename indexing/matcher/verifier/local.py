"""The local verifier: the shared llama.cpp runtime (indexing.llm.runtime) on the verifier's system turn, asking
each pair's two questions on the shared prefixes: the idea once for all its papers, a paper once for both questions.
Each question reads the next-token distribution once: P(Yes) / (P(Yes) + P(No)).
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from indexing.llm.keys import weights_key
from indexing.llm.probe import local_model
from indexing.llm.runtime import LlamaRuntime
from indexing.llm.worker import ModelProcess
from indexing.matcher.verifier import prompts
from indexing.matcher.verifier.base import Paper, Verdict, VerifierUnavailable
from indexing.settings import Settings


def revision_of(sha256: str) -> str:
    """The local verifier's revision for a model file: its hash and the prompt version."""
    return f"local:{weights_key(sha256)}:{prompts.PROMPT_VERSION}"


class LocalVerifier(LlamaRuntime):
    name = "local"

    def __init__(self, path: Path, *, sha256: str, threads: int = 0, ctx: int = 4096, **runtime: Any) -> None:
        """runtime: further llama.cpp options (n_batch, flash_attn, type_k, ...) for the benchmark's trials."""
        super().__init__(path, system=prompts.SYSTEM, threads=threads, ctx=ctx, what="verifier", **runtime)
        self.revision = revision_of(sha256)
        self._yes = self._token_ids(prompts.YES)
        self._no = self._token_ids(prompts.NO)
        if not self._yes or not self._no:
            raise VerifierUnavailable(f"{path}: the model's vocabulary has no single-token Yes/No")
        self._labels = [[[t] for t in self._yes], [[t] for t in self._no]]

    @classmethod
    def from_settings(cls, settings: Settings) -> "LocalVerifier":
        path, options = local_model(settings)
        return cls(path, **options)

    def _idea(self, idea: str) -> list[int]:
        return self._system + self._tokens(prompts.idea_block(idea) + "\n\n")

    def _paper(self, paper: Paper) -> list[int]:
        return self._tokens(prompts.paper_block(paper.title, paper.abstract) + "\n\n")

    def _question(self, question: str) -> list[int]:
        return self._tokens(prompts.QUESTIONS[question] + self._answer)

    def prompt(self, idea: str, paper: Paper, question: str) -> list[int]:
        """The tokens of one question about one pair, as judge evaluates them (in three shared pieces)."""
        return self._idea(idea) + self._paper(paper) + self._question(question)

    def _ask(self, prefix: list[int], question: list[int]) -> float:
        """P(Yes) / (P(Yes) + P(No)) of the next token."""
        return self.label_probs(prefix, question, self._labels)[0][0]

    def judge(self, idea: str, papers: Sequence[Paper]) -> list[Verdict]:
        with self._lock:
            base = self._idea(idea)
            questions = {q: self._question(q) for q in prompts.QUESTIONS}
            out = []
            for paper in papers:
                with_paper = base + self._paper(paper)
                p = {q: self._ask(with_paper, tokens) for q, tokens in questions.items()}
                out.append(Verdict(p_direction=p["direction"], p_realised=p["realised"], source="logprobs"))
            return out

    def judge_unshared(self, idea: str, papers: Sequence[Paper]) -> list[Verdict]:
        """judge with every prompt evaluated from its first token: the baseline that prefix sharing is measured and
        checked against."""
        with self._lock:
            out = []
            for paper in papers:
                p = {}
                for question in prompts.QUESTIONS:
                    self._cut(0)
                    p[question] = self._ask([], self.prompt(idea, paper, question))
                out.append(Verdict(p_direction=p["direction"], p_realised=p["realised"], source="logprobs"))
            return out


class VerifierProcess(ModelProcess):
    """The local verifier in a worker process (indexing.llm.worker), for the server's jobs: a native crash fails the
    job with its error and the server keeps serving."""

    name = "local"

    def __init__(self, settings: Settings) -> None:
        path, options = local_model(settings)  # a missing file or a failed probe is answered before a worker starts
        super().__init__(LocalVerifier, (path,), options, names=("revision",), what="the local verifier")
        self.revision: str = self.attrs["revision"]

    def judge(self, idea: str, papers: Sequence[Paper]) -> list[Verdict]:
        return list(self.call("judge", idea, list(papers)))
