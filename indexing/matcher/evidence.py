"""Why a paper matched, computed lexically so it costs microseconds: the abstract sentence that shares the most
idf-weighted method stems with the idea, and the method's words that the paper also uses."""

import re

from indexing.lexical import LexicalIndex, stemmer, words

SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")
MAX_SENTENCE = 400
MAX_TERMS = 8


def sentences(abstract: str) -> list[str]:
    return [s.strip() for s in SENTENCE.split(abstract or "") if s.strip()]


def evidence(lexical: LexicalIndex, method_text: str, title: str, abstract: str) -> dict:
    """{'sentence': closest abstract sentence or None, 'shared_terms': method words the paper uses}."""
    stem = stemmer().stemWord
    vocab, idf = lexical.bm25.vocab_dict, lexical.idf

    def weight(s: str) -> float:
        i = vocab.get(s)
        return float(idf[i]) if i is not None and i < len(idf) else lexical.oov_idf

    method_words: dict[str, str] = {}  # stem -> first surface word
    for w in words(method_text)[:4096]:
        method_words.setdefault(stem(w), w)
    best, best_score = None, 0.0
    paper_stems: set[str] = {stem(w) for w in words(title)}
    for sent in sentences(abstract):
        stems = {stem(w) for w in words(sent)}
        paper_stems |= stems
        score = sum(weight(s) for s in stems & method_words.keys())
        if score > best_score:
            best, best_score = sent, score
    # terms in a third or more of the papers (idf < 1) say nothing about why this one matched
    shared = sorted((s for s in paper_stems & method_words.keys() if weight(s) >= 1.0),
                    key=lambda s: (-weight(s), s))[:MAX_TERMS]
    if best and len(best) > MAX_SENTENCE:
        best = best[:MAX_SENTENCE - 1].rstrip() + "…"
    return {"sentence": best, "shared_terms": [method_words[s] for s in shared]}
