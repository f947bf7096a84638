"""What names a model in cache keys and stored revisions: a GGUF by its file's hash, an endpoint by its model and
host. The verifier's revision and the judge's weights are built on these, so a change of weights is a new key."""


def weights_key(sha256: str) -> str:
    """A GGUF file's short name in keys: the first 12 hex digits of its SHA-256."""
    return sha256[:12]


def endpoint_key(model: str, host: str) -> str:
    """An endpoint's model in keys: model@host (host with its port)."""
    return f"{model}@{host}"
