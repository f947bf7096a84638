"""An idea's and a paper's text as a model reads them: clipped at sentence ends, so that what a prompt costs is
bounded and what it holds stays whole. The verifier and the judge each choose their own limits."""

import re

_SENTENCE_END = re.compile(r"[.!?](?=\s)")


def clip(text: str, limit: int) -> str:
    """text cut to at most limit characters, at its last sentence end inside them (else its last word)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit + 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= limit // 2:
        return head[:ends[-1]]
    return head.rsplit(" ", 1)[0].rstrip(",;:") + " …"


def text_of_idea(problem: str | None, method: str | None, text: str | None, *, limits: tuple[int, int, int]) -> str:
    """An idea as a model reads it, each part clipped to its limit (problem, method, free text; characters); free
    text wins, as in facets_of."""
    if text and text.strip():
        return clip(text, limits[2])
    p, m = clip(problem or "", limits[0]), clip(method or "", limits[1])
    return "\n".join(part for part in (f"Problem: {p}" if p else "", f"Method: {m}" if m else "") if part)
