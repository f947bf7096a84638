"""The LLM judge's JSON answers (/v1/llm-judge/*), field for field as prompts, cache and audit build them."""

from typing import Any

from pydantic import Field

from service.schemas import Answer, Number


class PromptOut(Answer):
    """A prompt version: its texts per task and the system prompt of each."""

    name: str
    summary: str
    sha: str
    default: bool
    rate: dict[str, str] = Field(description="The rating question per dimension.")
    pair: str
    points: str
    pairs: str
    systems: dict[str, str] = Field(description="The system prompt per task.")


class RevisionOut(Answer):
    """A judge made here: its stored name, what it stands for, its answers by source."""

    name: str
    revision: str | None
    backend: str | None = None
    model: str | None = None
    weights: str | None = None
    prompt: str | None
    prompt_sha: str | None = None
    decoding: str | None = None
    note: str | None = None
    answers: dict[str, int] | None = Field(None, description="Rating answers per source (logprobs, parsed, sampled, "
                                                             "invalid).")
    invalid: int | None = None


class Sides(Answer):
    a: int
    b: int


class AuditBlock(Answer):
    """Two judges' verdicts on one dimension (all ideas, or one group's)."""

    n: int
    n_compared: int
    flips: int
    flip_rate: Number | None
    flip_rate_ci95: list[Number] | None
    spearman: Number | None
    kendall: Number | None
    mean_a: Number | None
    mean_b: Number | None
    mean_shift: Number | None
    mean_shift_ci95: list[Number] | None
    positive_a: int
    positive_b: int
    invalid: Sides
    missing: Sides
    only_a: int
    only_b: int


class AuditDimension(AuditBlock):
    groups: dict[str, AuditBlock] = Field(description="Per system/run.")


class JudgeNames(Answer):
    a: str
    b: str


class AuditOut(Answer):
    """GET /v1/llm-judge/audit: judge b against judge a, per dimension, overall and per run."""

    judges: JudgeNames
    pairwise: dict[str, dict[str, Any] | None] = Field(description="Per side, its order-swap flips (null: no "
                                                                    "pairwise answers).")
    revisions: dict[str, RevisionOut]
    cut: Number
    rule: str
    ideas: int
    n_boot: int
    seed: int
    dimensions: dict[str, AuditDimension]
    counting: dict[str, str]
