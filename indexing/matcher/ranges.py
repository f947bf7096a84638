"""Inputs the matcher was not made for, said in the answer: per idea a list of warnings, and whether the idea holds
the evidence `realised` needs (its problem and its method, in English, with enough words to carry them).

An idea that lacks it is judged for direction only: its matches are never `realised`, whatever the models say.
A text past the embedder's window is warned about but still decided: the embedder reads its first tokens, BM25
reads all of it.
"""

import re
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from indexing.lexical import STOPWORDS, TOKEN, words
from indexing.matcher.facets import PARTS, IdeaFacets

DIRECTION_ONLY = "judged for direction only: this idea cannot be realised (see the warnings above)"
MIN_WORDS = 8  # distinct content words (stop words left out) an idea needs before it can be realised
ENGLISH_STOPWORD_SHARE = 0.2  # English prose runs at 35-50% stop words; German, French, Spanish at under 10%
MIN_WORDS_FOR_LANGUAGE = 12
LATIN = re.compile(r"[A-Za-z]")
LETTER = re.compile(r"[^\W\d_]")


@dataclass
class Range:
    warnings: list[str] = field(default_factory=list)
    can_realise: bool = True

    def cap(self, message: str) -> None:
        self.warnings.append(message)
        self.can_realise = False

    def for_hybrid(self) -> list[str]:
        """The warnings as the hybrid matcher answers them: a capped idea says it was judged for direction only."""
        return self.warnings + ([DIRECTION_ONLY] if not self.can_realise else [])


def english(text: str) -> bool:
    """A stop-word share check: English text is at least a fifth English stop words and mostly Latin letters."""
    letters = LETTER.findall(text)
    if letters and sum(bool(LATIN.match(c)) for c in letters) / len(letters) < 0.7:
        return False
    tokens = TOKEN.findall(text.lower())
    if len(tokens) < MIN_WORDS_FOR_LANGUAGE:
        return True
    return sum(t in STOPWORDS for t in tokens) / len(tokens) >= ENGLISH_STOPWORD_SHARE


def check(idea: IdeaFacets, *, token_counts: dict[str, int] | None = None, max_tokens: int | None = None) -> Range:
    """The idea's warnings, and whether it can be realised at all."""
    out = Range()
    text = idea.lexical_texts()["whole"]
    given = idea.shape_given
    if given == "problem":
        out.cap("no method given")
    elif given == "method":
        out.cap("no problem given")
    n_words = len(set(words(text)))
    if n_words < MIN_WORDS:
        out.cap(f"very short ({n_words} distinct content words; a title or a phrase cannot carry a problem and a "
                "method)")
    if not english(text):
        out.cap("not English (the embedder and BM25 are English-only)")
    if token_counts and max_tokens:
        past = {f: n for f, n in token_counts.items() if n > max_tokens and f not in PARTS}
        for f, n in past.items():
            out.warnings.append(f"{f} is {n} tokens, past the embedder's {max_tokens}: its cosine reads the first "
                                f"{max_tokens}, BM25 reads all of it")
    return out


def check_all(embedder, ideas: Sequence[IdeaFacets],
              counts: Sequence[dict[str, int]] | None = None) -> list[Range]:
    """Each idea's range check; counts: token_counts' (counted here when not given)."""
    counts = counts if counts is not None else token_counts(embedder, ideas)
    max_tokens = getattr(embedder, "max_tokens", None)
    return [check(idea, token_counts=counts[i] if counts else None, max_tokens=max_tokens)
            for i, idea in enumerate(ideas)]


def token_counts(embedder, ideas: Sequence[IdeaFacets]) -> list[dict[str, int]] | None:
    """Tokens of each embedded facet by the embedder's own tokenizer (None when it exposes none)."""
    tokenizer = getattr(embedder, "tokenizer", None)
    if tokenizer is None:
        return None
    texts = [(i, f, t) for i, idea in enumerate(ideas) for f, t in idea.texts().items()]
    lengths = _counter(tokenizer)([t for _, _, t in texts]) if texts else []
    out: list[dict[str, int]] = [{} for _ in ideas]
    for (i, f, _), n in zip(texts, lengths):
        out[i][f] = n
    return out


_COUNTERS: "weakref.WeakKeyDictionary[Any, Callable[[list[str]], list[int]]]" = weakref.WeakKeyDictionary()
_COUNTERS_LOCK = threading.Lock()


def _counter(tokenizer: Any) -> Callable[[list[str]], list[int]]:
    """Token counts (special tokens included, no truncation) by a tokenizer of the embedder's own.

    A fast tokenizer's truncation is state on its Rust tokenizer: switching it off there while an encode runs in
    another request's thread fails ("Already borrowed"). So counts come from a private copy of the Rust tokenizer,
    made once with truncation and padding off and never changed after, which concurrent threads can share without a
    lock; a slow (Python) tokenizer takes truncation per call and is asked directly."""
    with _COUNTERS_LOCK:
        if tokenizer not in _COUNTERS:
            backend = getattr(tokenizer, "backend_tokenizer", None)
            if backend is None:
                def count(texts: list[str]) -> list[int]:
                    ids = tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
                    return [len(row) for row in ids]
            else:
                private = type(backend).from_str(backend.to_str())
                private.no_truncation()
                private.no_padding()

                def count(texts: list[str]) -> list[int]:
                    return [len(e) for e in private.encode_batch_fast(texts, add_special_tokens=True)]
            _COUNTERS[tokenizer] = count
        return _COUNTERS[tokenizer]
