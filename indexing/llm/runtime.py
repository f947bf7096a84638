"""A GGUF chat model run in process by llama.cpp (llama-cpp-python): by default the packaged
Qwen2.5-Coder-1.5B-Instruct Q4_K_M (model_files.py), read by the verifier and the judge.

Prefixes are shared through llama.cpp's KV cache: a system turn is evaluated once per load, a shared prefix once for
the questions asked on it; going back to a prefix drops the cache past it (no state copies: measured faster than
saving and loading states, docs/verifier-local.md). Each question reads the next-token distribution over a few answer
labels.
"""

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embedders import cpu
from indexing.llm.errors import ModelUnavailable

# ChatML (the Qwen2.5 family's), for a GGUF that carries no chat template
CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
_USER = "\x00user turn\x00"  # a marker no prompt holds: where the template puts the user's text
# a label that goes on ("1" of "10") is split by the next token only when it holds at least this share: below it
# the split moves an expected rating by less than 0.01
CONTINUE_MIN = 1e-3


def chat_frame(template: str | None, system: str) -> tuple[str, str]:
    """(text before the user's message, text after it up to the answer) of a system + user chat in `template`."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    formatter = Jinja2ChatFormatter(template or CHATML, eos_token="", bos_token="", add_generation_prompt=True)
    try:
        text = formatter(messages=[{"role": "system", "content": system},
                                   {"role": "user", "content": _USER}]).prompt
    except Exception as e:  # a template's own errors (jinja2 raises many kinds)
        raise ModelUnavailable(f"the model's chat template does not render a system + user chat: {e}") from e
    if text.count(_USER) != 1:
        raise ModelUnavailable("the model's chat template does not put the user's message in the prompt verbatim")
    before, after = text.split(_USER)
    return before, after


def _shares(mass: list[float]) -> tuple[list[float], float]:
    """The labels' masses renormalised, and their total."""
    total = sum(mass)
    return ([m / total for m in mass] if total > 0 else [0.0] * len(mass)), total


class LlamaRuntime:
    """A GGUF chat model run by llama.cpp with one system turn, whose KV cache keeps the prefix it shares with the
    next prompt; the next token's probabilities are read over a few answer labels (the verifier's Yes/No, the
    judge's ratings)."""

    def __init__(self, path: Path, *, system: str, threads: int = 0, ctx: int = 4096, what: str = "model",
                 ctx_setting: str = "HINDSIGHT_VERIFIER_CTX", sequences: int = 1, **runtime: Any) -> None:
        """sequences: how many questions label_probs_many may read in one batch (each its own sequence on the
        shared prefix); runtime: further llama.cpp options (n_batch, flash_attn, type_k, ...) for benchmarks."""
        try:
            from llama_cpp import Llama  # the `verifier` extra; imported here so the rest never needs it
            from llama_cpp._internals import LlamaBatch, LlamaContext
        except ImportError:
            raise ModelUnavailable("the local model needs llama-cpp-python: "
                                      "pip install -e '.[verifier]'") from None

        self.path = path
        self._what, self._ctx_setting = what, ctx_setting
        options: dict[str, Any] = {"n_batch": 512, **runtime}
        try:
            # logits_all=False: llama.cpp computes the logits of each batch's last token only, the one read here
            self._llm = Llama(model_path=str(path), n_ctx=ctx, n_threads=threads or cpu.cores(), logits_all=False,
                              verbose=False, **options)
        except ValueError as e:  # llama-cpp-python's "Failed to load model from file"
            raise ModelUnavailable(f"{path}: llama.cpp cannot load it ({e})") from e
        self._sequences = sequences
        if sequences > 1:
            # Llama takes no n_seq_max: its context is remade with room for the questions' sequences, in one KV
            # buffer so that they share the prefix's cells instead of copying them
            params = self._llm.context_params
            params.n_seq_max, params.kv_unified = sequences + 1, True
            single, self._llm._ctx = self._llm._ctx, LlamaContext(model=self._llm._model, params=params,
                                                                   verbose=False)
            single.close()
            self._batch = LlamaBatch(n_tokens=self._llm.n_batch, embd=0, n_seq_max=1, verbose=False)
        self._lock = threading.Lock()
        before, self._answer = chat_frame(self._llm.metadata.get("tokenizer.chat_template"), system)
        self._system = self._tokens(before)
        self._evaluated: list[int] = []  # the tokens whose keys and values the cache holds, in order
        self.tokens_evaluated = 0  # since load: what the work costs, whatever the machine's load

    def _tokens(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def _token_ids(self, words: Sequence[str]) -> list[int]:
        ids = set()
        for w in words:
            t = self._llm.tokenize(w.encode("utf-8"), add_bos=False, special=False)
            if len(t) == 1:
                ids.add(t[0])
        return sorted(ids)

    def label_tokens(self, forms: Sequence[str]) -> list[list[int]]:
        """The token sequences of a label's written forms ("Yes", " yes"; "10" may be "1" then "0")."""
        found = {tuple(self._llm.tokenize(f.encode("utf-8"), add_bos=False, special=False)) for f in forms}
        return [list(t) for t in sorted(found) if t]

    def _extend(self, tokens: list[int]) -> None:
        """Evaluate tokens on top of what the cache holds."""
        if len(self._evaluated) + len(tokens) > self._llm.n_ctx():
            raise ModelUnavailable(f"a prompt needs {len(self._evaluated) + len(tokens)} tokens, past the "
                                      f"{self._what}'s context of {self._llm.n_ctx()} ({self._ctx_setting})")
        self._llm.eval(tokens)
        self._evaluated += tokens
        self.tokens_evaluated += len(tokens)

    def _cut(self, n: int) -> None:
        """Drop the cache past the first n tokens."""
        if len(self._evaluated) > n:
            self._llm._ctx.kv_cache_seq_rm(-1, n, -1)
            self._llm.n_tokens = n
            del self._evaluated[n:]

    def _at(self, prefix: list[int]) -> None:
        """Make the cache hold `prefix`, keeping what it holds of it; the caller evaluates more tokens next, so the
        logits of the prefix's last token are never read."""
        shared = 0
        for a, b in zip(self._evaluated, prefix):
            if a != b:
                break
            shared += 1
        self._cut(shared)
        if shared < len(prefix):
            self._extend(prefix[shared:])

    def _at_whole(self, frame: list[int], prefix: list[int]) -> None:
        """Make the cache hold frame + prefix with the frame evaluated alone and the prefix in one piece after it,
        whatever the cache held before: the prefix's keys and values then never depend on what was asked before
        (the kernels round by batch shape: sharing a prompt's first tokens with the one before moved an expected
        rating of the packaged model by up to 0.07)."""
        if self._evaluated == frame + prefix:
            return
        self._cut(len(frame) if self._evaluated[:len(frame)] == frame else 0)
        self._at(frame)
        self._extend(prefix)

    def _next(self, row: int = -1) -> np.ndarray:
        """The next token's probabilities after what the cache holds (row: after that token of the last batch)."""
        logits = self._llm._ctx.get_logits() if row < 0 else self._llm._ctx.get_logits_ith(row)
        values = np.ctypeslib.as_array(logits, shape=(self._llm.n_vocab(),)).astype(np.float64)
        p = np.exp(values - values.max())
        return np.asarray(p / p.sum())

    def _mass(self, probs: np.ndarray, labels: Sequence[Sequence[Sequence[int]]], depth: int,
              after: Callable[[int], np.ndarray] | None = None) -> list[float]:
        """Each label's probability from here (probs: after `depth` of its tokens); a label that is a prefix of
        another ("1" of "10") ends here unless the next token goes on to the longer one. after(token): the next
        token's probabilities after this token, where a batch has them (else it is evaluated here)."""
        mass = [0.0] * len(labels)
        deeper: dict[int, list[tuple[int, list[int]]]] = {}  # token -> (label, its remaining tokens)
        for i, forms in enumerate(labels):
            for seq in forms:
                if len(seq) == depth + 1:
                    mass[i] += float(probs[seq[depth]])
                elif len(seq) > depth + 1:
                    deeper.setdefault(seq[depth], []).append((i, list(seq)))
        for token, longer in deeper.items():
            if float(probs[token]) < CONTINUE_MIN:  # too rare to matter: the shorter label keeps its share
                continue
            sub: list[list[list[int]]] = [[] for _ in labels]
            for i, seq in longer:
                sub[i].append(seq)
            if after is not None:
                got = self._mass(after(token), sub, depth + 1)
            else:
                here = len(self._evaluated)
                self._extend([token])
                got = self._mass(self._next(), sub, depth + 1)
                self._cut(here)
            ends = [i for i, forms in enumerate(labels) if any(len(s) == depth + 1 and s[depth] == token
                                                             for s in forms)]
            p_token = float(probs[token])
            for i in range(len(labels)):
                mass[i] += p_token * got[i]
            if ends:  # the shorter label takes what does not go on to a longer one
                share = p_token * (1.0 - sum(got))
                for i in ends:
                    mass[i] += (share - p_token) / len(ends)
        return mass

    def label_probs(self, prefix: list[int], question: list[int],
                    labels: Sequence[Sequence[Sequence[int]]]) -> tuple[list[float], float]:
        """P of each label after prefix + question, renormalised over the labels, and the share of the answer's
        probability the labels hold before renormalising."""
        self._at(prefix)
        self._extend(question)
        return _shares(self._mass(self._next(), labels, 0))


    def label_probs_many(self, prefix: list[int], questions: Sequence[list[int]],
                         labels: Sequence[Sequence[Sequence[int]]]) -> list[tuple[list[float], float]]:
        """label_probs of each question after the same prefix, the questions in one batch where they fit: each is a
        sequence of its own on the prefix's cells, carrying the one token a longer label goes on with ("1" of
        "10"), so that one evaluation reads every question (measured 20% faster than one question at a time)."""
        going_on = {seq[0] for forms in labels for seq in forms if len(seq) > 1}
        if (self._sequences < 2 or len(going_on) > 1 or any(len(seq) > 2 for forms in labels for seq in forms)):
            return [self.label_probs(prefix, q, labels) for q in questions]
        self._at(prefix)
        out: list[tuple[list[float], float]] = []
        group: list[list[int]] = []
        for question in questions:
            tokens = question + sorted(going_on)
            if group and (len(group) == self._sequences or sum(map(len, group)) + len(tokens) > self._llm.n_batch):
                out += self._read_batch(group, labels, bool(going_on))
                group = []
            group.append(tokens)
        return out + self._read_batch(group, labels, bool(going_on))

    def _read_batch(self, group: list[list[int]], labels: Sequence[Sequence[Sequence[int]]],
                    goes_on: bool) -> list[tuple[list[float], float]]:
        """Evaluate each token list as sequence 1, 2, ... on the prefix (sequence 0), read, and drop them."""
        start, held = len(self._evaluated), len(self._evaluated) + sum(map(len, group))
        if held > self._llm.n_ctx():
            raise ModelUnavailable(f"{len(group)} questions need {held} tokens, past the {self._what}'s context "
                                      f"of {self._llm.n_ctx()} ({self._ctx_setting})")
        batch, ctx = self._batch.batch, self._llm._ctx
        batch.n_tokens = 0
        reads: list[tuple[int, int]] = []  # batch rows: (after the question, after the token that goes on)
        for seq, tokens in enumerate(group, start=1):
            ctx.kv_cache_seq_cp(0, seq, 0, start)
            for i, token in enumerate(tokens):
                j = batch.n_tokens
                batch.token[j], batch.pos[j], batch.n_seq_id[j] = token, start + i, 1
                batch.seq_id[j][0] = seq
                batch.logits[j] = i >= len(tokens) - 1 - goes_on
                batch.n_tokens += 1
            last = batch.n_tokens - 1
            reads.append((last - goes_on, last))
        try:
            ctx.decode(self._batch)
            self.tokens_evaluated += batch.n_tokens
            out = []
            for first, then in reads:
                after = self._next(then)
                out.append(_shares(self._mass(self._next(first), labels, 0, after=lambda _token: after)))
            return out
        finally:
            for seq in range(1, len(group) + 1):
                ctx.kv_cache_seq_rm(seq, -1, -1)
