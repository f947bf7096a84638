"""Why a paper matched, computed lexically so it costs microseconds: the abstract sentences that share the most
idf-weighted method (and problem) stems with the idea, and the method's words that the paper also uses."""

import math
import re
from functools import lru_cache

from indexing.lexical import stemmer, words

SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")
MAX_SENTENCE = 400
MAX_TERMS = 8
PAPERS_CACHED = 2048  # split and stemmed papers kept (about 15 kB each): a request's matches are mostly repeats


def sentences(abstract: str) -> list[str]:
    return [s.strip() for s in SENTENCE.split(abstract or "") if s.strip()]


@lru_cache(maxsize=PAPERS_CACHED)
def paper_stems(title: str, abstract: str) -> tuple[list[tuple[str, set[str]]], set[str]]:
    """A paper's abstract sentences with their stems, and every stem of title and abstract (shared: never mutate)."""
    stem = stemmer().stemWord
    sents = [(s, {stem(w) for w in words(s)}) for s in sentences(abstract)]
    return sents, {stem(w) for w in words(title)}.union(*(st for _, st in sents))


@lru_cache(maxsize=64)
def idea_stems(text: str) -> dict[str, str]:
    """stem -> first surface word of an idea's text (asked once per match, so kept; shared: never mutate)."""
    stem = stemmer().stemWord
    out: dict[str, str] = {}
    for w in words(text)[:4096]:
        out.setdefault(stem(w), w)
    return out


def evidence(lexical, method_text: str, title: str, abstract: str, *, problem_text: str | None = None) -> dict:
    """{'sentence': the abstract sentence closest to the method (or None), 'problem_sentence': the one closest to
    the problem (None without a problem), 'shared_terms': method words the paper uses}."""
    vocab, idf = lexical.bm25.vocab_dict, lexical.idf

    def weight(s: str) -> float:
        i = vocab.get(s)
        return float(idf[i]) if i is not None and i < len(idf) else lexical.oov_idf

    method_words = idea_stems(method_text)
    problem_words = idea_stems(problem_text) if problem_text else {}
    weights = {s: weight(s) for s in method_words.keys() | problem_words.keys()}  # the idea's stems, weighed once
    sents, stems_of_paper = paper_stems(title or "", abstract or "")
    # terms in a third or more of the papers (idf < 1) say nothing about why this one matched
    shared = sorted((s for s in stems_of_paper & method_words.keys() if weights[s] >= 1.0),
                    key=lambda s: (-weights[s], s))[:MAX_TERMS]

    def closest(wanted: dict[str, str]) -> str | None:
        best, best_score = None, 0.0
        for sent, stems in sents:
            score = math.fsum(weights[s] for s in stems & wanted.keys())  # exact: no order of the set moves a tie
            if score > best_score:
                best, best_score = sent, score
        if best and len(best) > MAX_SENTENCE:
            best = best[:MAX_SENTENCE - 1].rstrip() + "…"
        return best

    return {"sentence": closest(method_words), "problem_sentence": closest(problem_words) if problem_words else None,
            "shared_terms": [method_words[s] for s in shared]}
