"""The lexical index of a version: BM25 (bm25s) over title + abstract, saved beside the FAISS index.

Document i is the i-th entry of the version's papers.json, in its list order, so a position range of the snapshot
(`allowed`, e.g. a publication-date window) restricts lexical and dense search alike. Texts are lower-cased, split
into words of two or more characters, stripped of English stop words (scikit-learn's list) and Snowball-stemmed
(PyStemmer).

Besides raw BM25, `normalised` divides a document's score by the query's own ceiling: the sum of the idf of its
distinct terms (a term's BM25 contribution is idf * tf / (tf + k1 * length norm) < idf). That is the share of the
query's information a document holds, in [0, 1), comparable between a two-line and a twenty-line idea and between
corpora; a query of fewer than MIN_TERMS distinct stems counts the missing ones as unmatched. Terms the corpus
lacks count in the ceiling with document frequency 0: an idea made of words no paper uses is not lexically
realised by any of them.
"""

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import bm25s
import numpy as np
import orjson
from indexing.stopwords import ENGLISH_STOP_WORDS

# plain files of the version folder (the manifest's checksums name plain files)
DATA, INDICES, INDPTR = "lexical.data.npy", "lexical.indices.npy", "lexical.indptr.npy"
VOCAB, PARAMS, ABSTRACTS = "lexical.vocab.json", "lexical.params.json", "lexical.abstracts.json"
FILES = (DATA, INDICES, INDPTR, VOCAB, PARAMS, ABSTRACTS)
TOKEN = re.compile(r"(?u)\b\w\w+\b")
TOKENIZER = {"pattern": TOKEN.pattern, "lower": True, "stopwords": "scikit-learn english (318)",
             "stemmer": "snowball english"}
MAX_QUERY_TOKENS = 4096  # a 20,000-character field holds at most ~6,700 words; distinct stems are far fewer
# A query with fewer distinct stems is scored as if it had this many, the missing ones matching nothing: three
# words cannot carry the lexical evidence of a proposal (dev ideas' facets have 9 to 65 distinct stems).
MIN_TERMS = 10


class LexicalDamaged(RuntimeError):
    """The lexical files of a version cannot be read or disagree with its papers."""


@lru_cache(maxsize=1)
def stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


STOPWORDS = frozenset(ENGLISH_STOP_WORDS)  # Lucene's 33 (bm25s' "en") leave "which", "can", "from" in


def words(text: str) -> list[str]:
    """Lower-cased words of two or more characters, stop words removed (not stemmed)."""
    return [w for w in TOKEN.findall((text or "").lower()) if w not in STOPWORDS]


def tokens(text: str) -> list[str]:
    """The stems BM25 indexes and queries with."""
    return stemmer().stemWords(words(text))


@dataclass
class Query:
    """A query's distinct in-vocabulary token ids and its score ceiling (sum of idf over all distinct stems)."""

    ids: np.ndarray
    ceiling: float
    stems: frozenset[str] = field(default_factory=frozenset)


@dataclass
class LexicalIndex:
    bm25: bm25s.BM25
    abstracts: list[str]
    idf: np.ndarray = field(init=False)
    tokenizer: dict = field(default_factory=lambda: dict(TOKENIZER))

    def __post_init__(self) -> None:
        indptr = np.asarray(self.bm25.scores["indptr"])
        df = np.diff(indptr).astype(np.float64)
        n = self.n_docs
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5))
        self.oov_idf = math.log1p((n + 0.5) / 0.5)

    @property
    def n_docs(self) -> int:
        return int(self.bm25.scores["num_docs"])

    def query(self, text: str) -> Query:
        stems = list(dict.fromkeys(tokens(text)))[:MAX_QUERY_TOKENS]
        vocab = self.bm25.vocab_dict
        n_terms = len(self.idf)  # bm25s' empty token is in the vocabulary without a column
        ids = np.array([vocab[s] for s in stems if vocab.get(s, n_terms) < n_terms], dtype=np.int64)
        ceiling = float(self.idf[ids].sum()) + self.oov_idf * (len(stems) - len(ids))
        if 0 < len(stems) < MIN_TERMS:
            ceiling *= MIN_TERMS / len(stems)
        return Query(ids=ids, ceiling=ceiling, stems=frozenset(stems))

    def scores(self, query: Query, allowed: tuple[int, int] | None = None) -> np.ndarray:
        """BM25 of the query against every document (0 outside the allowed position range)."""
        if len(query.ids) == 0:
            return np.zeros(self.n_docs, dtype=np.float32)
        out = self.bm25.get_scores_from_ids(query.ids.tolist(), weight_mask=_mask(self.n_docs, allowed))
        return np.asarray(out, dtype=np.float32)

    def normalised(self, query: Query, allowed: tuple[int, int] | None = None) -> np.ndarray:
        """scores / the query's ceiling, in [0, 1)."""
        return self.scores(query, allowed) / query.ceiling if query.ceiling > 0 else np.zeros(self.n_docs, np.float32)

    def search(self, text: str, k: int, allowed: tuple[int, int] | None = None) -> list[tuple[int, float]]:
        """Top-k (position in papers.json, BM25 score), best first; documents scoring 0 are left out."""
        return top_positions(self.scores(self.query(text), allowed), k, allowed)


def _mask(n: int, allowed: tuple[int, int] | None) -> np.ndarray | None:
    if allowed is None:
        return None
    lo, hi = allowed
    mask = np.zeros(n, dtype=np.float32)
    mask[max(0, lo):max(0, min(n, hi))] = 1.0
    return mask


def top_positions(scores: np.ndarray, k: int, allowed: tuple[int, int] | None = None) -> list[tuple[int, float]]:
    """The k best positions of a score vector (within allowed = [lo, hi)), best first, zeros left out."""
    lo, hi = (0, len(scores)) if allowed is None else (max(0, allowed[0]), min(len(scores), allowed[1]))
    part = scores[lo:hi]
    if k <= 0 or part.size == 0:
        return []
    k = min(k, part.size)
    idx = np.argpartition(-part, k - 1)[:k]
    idx = idx[np.lexsort((idx, -part[idx]))]  # score desc, then position: deterministic ties
    return [(int(lo + i), float(part[i])) for i in idx if part[i] > 0]


def build_lexical(titles: list[str], abstracts: list[str]) -> LexicalIndex:
    """BM25 over title + abstract, document i = the i-th paper given."""
    texts = [f"{t or ''}\n{a or ''}" for t, a in zip(titles, abstracts, strict=True)]
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    # an empty document still gets its row (bm25s' empty token), so positions stay aligned
    retriever.index([tokens(t) or [""] for t in texts], show_progress=False)
    return LexicalIndex(bm25=retriever, abstracts=[a or "" for a in abstracts])


def save_lexical(index: LexicalIndex, folder: Path) -> list[Path]:
    """Write the lexical files into folder; returns them (for the manifest's checksums)."""
    index.bm25.save(folder, data_name=DATA, indices_name=INDICES, indptr_name=INDPTR, vocab_name=VOCAB,
                    params_name=PARAMS, show_progress=False)
    (folder / ABSTRACTS).write_bytes(orjson.dumps(index.abstracts))
    return [folder / name for name in FILES]


def describe(index: LexicalIndex) -> dict:
    """The manifest's `lexical` block."""
    return {"kind": "bm25s", "bm25s_version": bm25s.__version__, "method": index.bm25.method, "k1": index.bm25.k1,
            "b": index.bm25.b, "documents": index.n_docs, "vocabulary": len(index.bm25.vocab_dict),
            "fields": "title + abstract", "tokenizer": index.tokenizer, "files": list(FILES)}


def load_lexical(folder: Path, n_papers: int) -> LexicalIndex:
    """Load and check a version's lexical files; LexicalDamaged says what is wrong."""
    try:
        retriever = bm25s.BM25.load(folder, data_name=DATA, indices_name=INDICES, indptr_name=INDPTR,
                                    vocab_name=VOCAB, params_name=PARAMS, show_progress=False)
        abstracts = orjson.loads((folder / ABSTRACTS).read_bytes())
    except (OSError, ValueError, TypeError, KeyError, json.JSONDecodeError) as exc:
        raise LexicalDamaged(f"lexical index cannot be read ({type(exc).__name__})") from None
    scores = retriever.scores
    indptr, indices = np.asarray(scores["indptr"]), np.asarray(scores["indices"])
    ok = (isinstance(abstracts, list) and all(isinstance(a, str) for a in abstracts)
          and scores.get("num_docs") == n_papers == len(abstracts)
          and indptr.ndim == 1 and 0 <= len(retriever.vocab_dict) + 1 - len(indptr) <= 1 and indptr[0] == 0
          and int(indptr[-1]) == len(indices) == len(scores["data"]) and bool(np.all(np.diff(indptr) >= 0))
          and (len(indices) == 0 or (int(indices.min()) >= 0 and int(indices.max()) < n_papers)))
    if not ok:
        raise LexicalDamaged(f"lexical index does not fit the {n_papers} papers of this version")
    return LexicalIndex(bm25=retriever, abstracts=abstracts)


@dataclass
class WindowLexical:
    """BM25 over the papers at positions [lo, hi) alone (their idf, their average length), answering in the
    positions of the whole version: a window of a wide version scores as a version built for the window."""

    inner: LexicalIndex
    lo: int
    hi: int
    n_all: int
    abstracts: list[str]  # the whole version's, by position

    @classmethod
    def of(cls, full: LexicalIndex, titles: list[str], lo: int, hi: int) -> "WindowLexical":
        return cls(build_lexical(titles, full.abstracts[lo:hi]), lo, hi, full.n_docs, full.abstracts)

    @property
    def n_docs(self) -> int:
        return self.n_all

    @property
    def bm25(self) -> bm25s.BM25:
        return self.inner.bm25

    @property
    def idf(self) -> np.ndarray:
        return self.inner.idf

    @property
    def oov_idf(self) -> float:
        return self.inner.oov_idf

    def query(self, text: str) -> Query:
        return self.inner.query(text)

    def _spread(self, part: np.ndarray, allowed: tuple[int, int] | None) -> np.ndarray:
        out = np.zeros(self.n_all, dtype=np.float32)
        out[self.lo:self.hi] = part
        if allowed is not None:
            out[:max(0, allowed[0])] = 0
            out[max(0, allowed[1]):] = 0
        return out

    def scores(self, query: Query, allowed: tuple[int, int] | None = None) -> np.ndarray:
        return self._spread(self.inner.scores(query), allowed)

    def normalised(self, query: Query, allowed: tuple[int, int] | None = None) -> np.ndarray:
        return self._spread(self.inner.normalised(query), allowed)
