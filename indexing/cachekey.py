"""The embedding cache key of a text: which model saw exactly which input.

Its own module so the local build (indexing/build.py) and the Ray path (indexing/distributed.py) share it without
importing each other. The weights revision (backend included) is a separate column of the cache, not part of this.
"""

import hashlib


def text_hash(embedder, text: str) -> str:
    """sha256 of the model key and the model's input; `embedder` needs only a `key` attribute."""
    return hashlib.sha256(f"{embedder.key}\x1f{text}".encode()).hexdigest()
