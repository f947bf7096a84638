"""The reference of a matcher fit: what its pair-only features are measured against, fixed with the fit.

* **Lexicon**: each stem's document frequency in the corpus the fit was made on. `coverage` is the share of a
  query's information a paper holds: the idf of the query's stems the paper's title + abstract also has, over the
  idf of all of them (a query of fewer than MIN_TERMS distinct stems counts the missing ones as unmatched; a stem the
  reference never saw weighs as a stem in no document). `coverage_z` puts it against what a reference paper would
  hold by chance (each stem present with its document frequency, independently).
* **Spread**: the mean and the leading principal directions of the reference papers' vectors (one embedder
  revision). `cosine_z` puts an idea's cosine with a paper against the cosines the idea has with reference papers:
  their mean is idea . mean, their variance idea' C idea (C: the top components plus an isotropic rest), so a long
  proposal, whose cosines are lower everywhere, is measured on its own scale.

Neither depends on the window's papers, so one (idea, paper) pair gets the same features, and so the same
decision, in every window and on both sides of every cutoff. Both are written once beside the registry that names
them, under a content name (`lexicon-<digest>.json`, `spread-<digest>.json`), so a published version's entry names
exactly the numbers it used.
"""

import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from indexing.lexical import MIN_TERMS, TOKENIZER, tokens

MIN_DF = 2  # stems in a single reference document are kept out of the file: they weigh as unseen ones
COMPONENTS = 16  # principal directions kept of the reference vectors' covariance


class ReferenceMissing(LookupError):
    """A file a matcher entry names is in none of the registry folders."""


def stems(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


@dataclass(frozen=True)
class Lexicon:
    documents: int
    df: dict[str, int]
    name: str = ""
    _idf: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def idf(self, stem: str) -> float:
        found = self._idf.get(stem)
        if found is None:
            d = self.df.get(stem, 0)
            found = self._idf[stem] = math.log1p((self.documents - d + 0.5) / (d + 0.5))
        return found

    def weights(self, query: frozenset[str]) -> tuple[dict[str, float], float]:
        """Each query stem's idf and the query's ceiling (fewer than MIN_TERMS stems count the missing as unmatched)."""
        weights = {s: self.idf(s) for s in query}
        # fsum: correctly rounded whatever the order a set is walked in (string hashes differ between processes)
        ceiling = math.fsum(weights.values()) * (MIN_TERMS / len(weights) if 0 < len(weights) < MIN_TERMS else 1.0)
        return weights, ceiling

    def coverage(self, query: frozenset[str], documents: Sequence[frozenset[str]]) -> np.ndarray:
        """Per document, the share of the query's idf mass whose stems it holds, in [0, 1]."""
        weights, ceiling = self.weights(query)
        if ceiling <= 0:
            return np.zeros(len(documents))
        return np.array([math.fsum(weights[s] for s in query & d) for d in documents], dtype=np.float64) / ceiling

    def chance(self, query: frozenset[str]) -> tuple[float, float]:
        """Mean and spread of coverage over reference papers, each stem present at its document frequency."""
        weights, ceiling = self.weights(query)
        if ceiling <= 0:
            return 0.0, 1.0
        p = {s: min(self.df.get(s, 0), self.documents) / max(self.documents, 1) for s in weights}
        mean = math.fsum(w * p[s] for s, w in weights.items()) / ceiling
        var = math.fsum(w * w * p[s] * (1 - p[s]) for s, w in weights.items()) / ceiling ** 2
        return mean, math.sqrt(max(var, 1e-6))

    def as_dict(self) -> dict:
        return {"documents": self.documents, "min_df": MIN_DF, "tokenizer": TOKENIZER,
                "df": dict(sorted(self.df.items()))}


@dataclass(frozen=True)
class Spread:
    mean: np.ndarray  # (dim,)
    components: np.ndarray  # (k, dim), orthonormal rows
    variances: np.ndarray  # (k,) along each component
    residual: float  # variance per remaining direction
    papers: int
    name: str = ""

    def z(self, idea: np.ndarray, cosines: np.ndarray) -> np.ndarray:
        """The cosines of one idea vector with papers, standardised by its cosines with the reference papers."""
        v = np.asarray(idea, dtype=np.float64)
        along = self.components @ v
        var = float(along ** 2 @ (self.variances - self.residual) + self.residual * (v @ v))
        return (np.asarray(cosines, dtype=np.float64) - float(self.mean @ v)) / math.sqrt(max(var, 1e-12))

    def as_dict(self) -> dict:
        return {"papers": self.papers, "mean": _r(self.mean), "components": [_r(c) for c in self.components],
                "variances": _r(self.variances), "residual": round(self.residual, 9)}


def _r(a: np.ndarray) -> list[float]:
    return [round(float(x), 7) for x in a]


def build_lexicon(texts: Iterable[str]) -> Lexicon:
    """Document frequencies of the texts' stems (title + abstract of each reference paper)."""
    counts: Counter[str] = Counter()
    n = 0
    for text in texts:
        counts.update(stems(text))
        n += 1
    return Lexicon(n, {s: c for s, c in counts.items() if c >= MIN_DF})


def build_spread(vectors: np.ndarray, k: int = COMPONENTS) -> Spread:
    """Mean and top-k principal directions of the reference papers' vectors."""
    x = np.asarray(vectors, dtype=np.float64)
    mean = x.mean(axis=0)
    centred = x - mean
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    k = min(k, len(s))
    variances = s[:k] ** 2 / len(x)
    total = float((centred ** 2).sum() / len(x))
    rest = max(x.shape[1] - k, 1)
    return Spread(mean, vt[:k], variances, max(total - float(variances.sum()), 0.0) / rest, len(x))


def _encoded(payload: dict) -> bytes:
    return (json.dumps(payload, sort_keys=True, separators=(",", ":")) + "\n").encode()


def _name(kind: str, data: bytes) -> str:
    return f"{kind}-{hashlib.sha256(data).hexdigest()[:12]}.json"


def write_reference(folder: Path, kind: str, payload: dict) -> str:
    """Write a reference file under its content name (atomic; an existing copy is the same bytes)."""
    data = _encoded(payload)
    name = _name(kind, data)
    path = Path(folder) / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return name


def write_lexicon(folder: Path, lexicon: Lexicon) -> str:
    return write_reference(folder, "lexicon", lexicon.as_dict())


def write_spread(folder: Path, spread: Spread) -> str:
    return write_reference(folder, "spread", spread.as_dict())


def _read(name: str, folders: Sequence[Path]) -> dict:
    for folder in folders:
        path = Path(folder) / name
        if path.is_file():
            data = path.read_bytes()
            if _name(name.split("-", 1)[0], data) != name:
                raise ValueError(f"matcher reference {path} does not match its name (changed after it was written)")
            return json.loads(data)
    raise ReferenceMissing(f"matcher reference {name} is in none of {', '.join(str(f) for f in folders)}")


def read_lexicon(name: str, folders: Sequence[Path]) -> Lexicon:
    d = _read(name, folders)
    return Lexicon(int(d["documents"]), {str(k): int(v) for k, v in d["df"].items()}, name=name)


def read_spread(name: str, folders: Sequence[Path]) -> Spread:
    d = _read(name, folders)
    return Spread(np.asarray(d["mean"], dtype=np.float64), np.asarray(d["components"], dtype=np.float64),
                  np.asarray(d["variances"], dtype=np.float64), float(d["residual"]), int(d["papers"]), name=name)
