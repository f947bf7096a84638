"""Model inputs cut so that a text's vector is its text's alone, for papers and queries alike.

Every text is padded (ids: the pad id, mask 0) up to the next of SHAPES lengths (multiples of max_tokens / SHAPES),
and a batch holds texts of one such length only. On float backends a row of a batch is then computed as it would be
alone (checked by tests/test_solo_vectors.py on every backend `auto` picks); padding to the batch's longest text
moved a vector in its last bits, by up to 0.0033 in a coordinate on int8. Backends whose int8 scales are taken from
the whole input tensor (ONNX dynamic quantisation) or whose kernels round by the batch's shape (OpenVINO's) run a
text per inference (batch_size 1). A paper's vector is then the query vector of the same text, whatever the build
or the request held beside it.
"""

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext

import numpy as np

SHAPES = 32
CHUNK = 256  # texts tokenised at a time: a build's first inferences start before all its texts are read

Feeds = dict[str, np.ndarray]


def lengths(max_tokens: int) -> list[int]:
    """The input lengths every text is padded to."""
    step = max(1, max_tokens // SHAPES)
    return list(range(step, max_tokens + step, step))


def padded_length(n: int, max_tokens: int) -> int:
    """The first of lengths(max_tokens) that holds n tokens."""
    step = max(1, max_tokens // SHAPES)
    return max(step, -(-n // step) * step)


def feeds(texts: list[str], tokenize: Callable[[list[str]], Feeds], *, max_tokens: int, batch_size: int,
          pad_id: int = 0, lock: AbstractContextManager | None = None) -> Iterator[tuple[list[int], Feeds]]:
    """(rows of texts, their inputs) in batches of at most batch_size texts of one padded length, longest first
    within each chunk; tokenize returns arrays padded to the longest text it was given (under lock, if any)."""
    for start in range(0, len(texts), CHUNK):
        with lock or nullcontext():
            tokens = tokenize(texts[start:start + CHUNK])
        counts = tokens["attention_mask"].sum(axis=1)
        groups: dict[int, list[int]] = {}
        for i in sorted(range(len(counts)), key=lambda i: -int(counts[i])):
            groups.setdefault(padded_length(int(counts[i]), max_tokens), []).append(i)
        for length, rows in groups.items():
            for b in range(0, len(rows), batch_size):
                take = rows[b:b + batch_size]
                yield [start + i for i in take], {k: _fit(v[take], length, pad_id if k == "input_ids" else 0)
                                                  for k, v in tokens.items()}


def _fit(values: np.ndarray, length: int, pad: int) -> np.ndarray:
    """Columns cut or padded to length (what is cut is padding: every row holds at most length tokens)."""
    have = values.shape[1]
    if have >= length:
        return np.ascontiguousarray(values[:, :length])
    return np.pad(values, ((0, 0), (0, length - have)), constant_values=pad)
