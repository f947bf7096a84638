"""The openai verifier: any OpenAI-compatible chat endpoint (indexing.llm.endpoint: retries, budget, key redaction).

Each question about a pair is one POST {url}/chat/completions at temperature 0 with logprobs. P(Yes) comes from the
answer token's top logprobs (renormalised over Yes and No); an endpoint that sends no logprobs has its text read as
Yes (1.0) or No (0.0). Both questions of a pair go in a row, so a server with a prefix cache reuses idea + paper.
An idea is not started unless the endpoint's budget covers its pairs.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from indexing.llm.endpoint import (
    TOP_LOGPROBS, BudgetSpent, ChatEndpoint, EndpointFailed, EndpointRefused, Malformed, endpoint_options,
    label_shares, reply_of, required_endpoint,
)
from indexing.matcher.verifier import prompts
from indexing.matcher.verifier.base import Paper, Verdict
from indexing.settings import Settings

# room for "**No**" or "Yes." from an endpoint without logprobs; with logprobs the first answer token decides
MAX_TOKENS = 4


@dataclass(frozen=True)
class Answer:
    p_yes: float
    source: str  # logprobs | parsed


YES_NO = {"yes": prompts.YES, "no": prompts.NO}


def read_answer(body: object) -> Answer:
    """P(Yes) of one chat.completion body; Malformed when it has no choice or its answer is neither Yes nor No."""
    content, text = reply_of(body)
    shares = label_shares(content, YES_NO)
    if shares is not None:
        return Answer(shares["yes"], "logprobs")
    p = prompts.parse_answer(text) if text is not None else None
    if p is None:
        raise Malformed(f"an answer that is neither Yes nor No: {text!r}"[:300])
    return Answer(p, "parsed")


class OpenAIVerifier(ChatEndpoint):
    name = "openai"

    def __init__(self, url: str, model: str, *, max_tokens: int = MAX_TOKENS, **options: Any) -> None:
        super().__init__(url, model, **options)
        self.revision = f"openai:{self.key}:{prompts.PROMPT_VERSION}"
        self.max_tokens = max_tokens

    @classmethod
    def from_settings(cls, settings: Settings) -> "OpenAIVerifier":
        url, model = required_endpoint(settings.llm.verifier_url, settings.llm.verifier_model, what="verifier",
                                       names=("HINDSIGHT_VERIFIER_URL", "HINDSIGHT_VERIFIER_MODEL"))
        return cls(url, model, **endpoint_options(settings))

    def judge(self, idea: str, papers: Sequence[Paper]) -> list[Verdict]:
        self._reserve(len(papers) * len(prompts.QUESTIONS))
        out = []
        for paper in papers:
            # both questions of the pair in a row: the endpoint's prefix cache holds idea + paper for the second
            got = {q: self._ask(prompts.messages(idea, paper.title, paper.abstract, q)) for q in prompts.QUESTIONS}
            source = "logprobs" if all(a.source == "logprobs" for a in got.values()) else "parsed"
            out.append(Verdict(p_direction=got["direction"].p_yes, p_realised=got["realised"].p_yes, source=source))
        return out

    def _ask(self, messages: list[dict[str, str]]) -> Answer:
        body = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": self.max_tokens,
                "logprobs": True, "top_logprobs": TOP_LOGPROBS}
        return self.complete(body, read_answer)


__all__ = ["BudgetSpent", "EndpointFailed", "EndpointRefused", "OpenAIVerifier", "read_answer"]
