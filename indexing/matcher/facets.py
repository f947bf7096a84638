"""An idea's facets: the one mapping from an idea's problem / method / free text to the texts the matcher compares
(serving, fitting and evaluation all call `facets_of`), and their vectors in one encode call."""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from indexing.embedders import Embedder, join


PARTS = ("first", "second")  # a one-text idea's halves, embedded beside its whole text


@dataclass
class IdeaFacets:
    """An idea's texts: whole always (the embedder's input: problem [SEP] method, or the free text); problem and
    method only when it was given as problem + method, both with content."""

    whole: str
    problem: str | None = None
    method: str | None = None
    plain: str | None = None  # the words of a one-facet idea, without the embedder's separator
    given: str = ""  # how the caller gave it: facets, problem (only), method (only) or text; "" = by its facets
    # a one-text idea's two halves (at the sentence boundary nearest its middle), embedded and searched on their own:
    # a paper that realises the idea holds both, one that shares only its problem or only its method holds one
    parts: tuple[str, str] | None = None

    @property
    def shape_given(self) -> str:
        return self.given or ("facets" if self.faceted else "text")

    @property
    def faceted(self) -> bool:
        return bool(self.problem and self.problem.strip() and self.method and self.method.strip())

    @property
    def words(self) -> int:
        """Word count of the idea's text (problem and method together): its style, for the pair-only features."""
        return len(self.lexical_texts()["whole"].split())

    def lexical_texts(self) -> dict[str, str]:
        if self.faceted:
            return {"whole": f"{self.problem}\n{self.method}", "problem": str(self.problem),
                    "method": str(self.method)}
        return {"whole": self.plain if self.plain is not None else self.whole}

    def texts(self) -> dict[str, str]:
        """What each facet is embedded as."""
        if self.faceted:
            return {"whole": self.whole, "problem": str(self.problem), "method": str(self.method)}
        return {"whole": self.whole, **(dict(zip(PARTS, self.parts)) if self.parts else {})}

    def as_text(self) -> "IdeaFacets":
        """The same idea given as one free text (problem and method joined): the text models' input."""
        text = " ".join(self.lexical_texts()["whole"].split("\n"))
        return IdeaFacets(text, given="text", parts=halves(text))


SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MIN_PART_WORDS = 4


def halves(text: str) -> tuple[str, str] | None:
    """The text cut at the sentence boundary nearest its middle word (mid-sentence when it is one sentence); None
    when a half would have fewer than MIN_PART_WORDS words."""
    words = text.split()
    if len(words) < 2 * MIN_PART_WORDS:
        return None
    sentences = [s for s in SENTENCE_END.split(text.strip()) if s]
    if len(sentences) > 1:
        counts = [len(s.split()) for s in sentences]
        before = [sum(counts[:i]) for i in range(1, len(sentences))]
        cut = min(range(len(before)), key=lambda i: abs(before[i] - len(words) / 2)) + 1
        first, second = " ".join(sentences[:cut]), " ".join(sentences[cut:])
        if min(len(first.split()), len(second.split())) >= MIN_PART_WORDS:
            return first, second
    middle = len(words) // 2
    return " ".join(words[:middle]), " ".join(words[middle:])


def facets_of(embedder: Embedder, *, problem: str | None = None, method: str | None = None,
              text: str | None = None) -> IdeaFacets:
    """Free text wins; else problem + method, both with content, are facets; one facet alone is a free text."""
    if text and text.strip():
        return IdeaFacets(text.strip(), given="text", parts=halves(text.strip()))
    p, m = (problem or "").strip(), (method or "").strip()
    whole = join(embedder, p, m)
    if p and m:
        return IdeaFacets(whole, p, m, given="facets")
    # one facet only: the text models
    return IdeaFacets(whole, plain=p or m, given="problem" if p else "method", parts=halves(p or m))


def encode_facets(encode_many: Callable[[list[list[str]]], list[np.ndarray]], ideas: Sequence[IdeaFacets], *,
                  counts: Sequence[dict[str, int]] | None = None,
                  max_tokens: int | None = None) -> list[dict[str, np.ndarray]]:
    """Every facet of every idea, each encoded at its own length, so a vector depends on its text alone (padding to
    a longer batch-mate moves a bf16 vector by up to 0.002): texts grouped by token count (counts: per idea, per
    facet, as ranges.token_counts gives them; capped at max_tokens, where the encoder truncates), every group handed
    to encode_many at once (a backend that can runs them side by side); without counts, a group per facet. Returns
    per idea {facet: vector}."""
    where = [(i, f, t) for i, idea in enumerate(ideas) for f, t in idea.texts().items()]
    groups: dict[object, list[int]] = {}
    for n, (i, f, _) in enumerate(where):
        key = f if counts is None else min(counts[i][f], max_tokens or counts[i][f])
        groups.setdefault(key, []).append(n)
    out: list[dict[str, np.ndarray]] = [{} for _ in ideas]
    encoded = encode_many([[where[m][2] for m in members] for members in groups.values()])
    for members, vectors in zip(groups.values(), encoded):
        for n, v in zip(members, vectors):
            i, f, _ = where[n]
            out[i][f] = v
    return out
