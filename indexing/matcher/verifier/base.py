"""The verifier protocol: a model that reads an idea and a paper together and answers the two decisions."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from indexing.llm.errors import ModelUnavailable

# the shared runtime's error: a verifier that cannot run here (not installed, no endpoint, budget spent) says why
VerifierUnavailable = ModelUnavailable


@dataclass(frozen=True)
class Paper:
    paper_id: str
    title: str
    abstract: str


@dataclass(frozen=True)
class Verdict:
    """One (idea, paper) pair read by a verifier: P(Yes) of each question, renormalised over Yes and No."""

    p_direction: float  # same concrete problem, by any means
    p_realised: float  # same problem AND the idea's method as the core mechanism
    source: str  # "logprobs" (token probabilities) or "parsed" (a Yes/No read off the text: 1.0 or 0.0)


class Verifier(Protocol):
    """Reads one idea with each of its candidate papers; a backend shares the idea's prefix across them."""

    name: str  # local, openai
    revision: str  # model identity + prompt version: a change of either is a new revision (cache key)

    def judge(self, idea: str, papers: Sequence[Paper]) -> list[Verdict]:
        """One verdict per paper, in order; raises VerifierUnavailable when it cannot answer at all."""
        ...
