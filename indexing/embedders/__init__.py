"""Embedder registry: one factory picks a model by key."""

from collections.abc import Callable

from indexing.embedders.base import Embedder, join
from indexing.settings import Settings

KNOWN = ("minilm", "specter2")


def load_embedder(key: str, settings: Settings, *, theta: float | None = None, backend: str | None = None,
                  check: bool = True) -> Embedder:
    """Load the named embedder; theta defaults to the model registry's calibrated value (see thetas.py), else the
    model's own constant; backend defaults to the model's setting (`auto` picks the fastest measured one that passes
    this machine's backend check, check.py). A backend named here or in the settings that fails the check raises
    check.BackendCheckFailed (a ValueError) unless settings.index.allow_failed_backend; check=False loads it
    unchecked."""
    if theta is None and key in KNOWN:
        from indexing.embedders.thetas import registry_theta

        theta = registry_theta(key, home=settings.home)
    if key not in KNOWN:
        raise ValueError(f"unknown model {key!r}; known: {', '.join(KNOWN)}")
    requested = backend or (settings.index.minilm_backend if key == "minilm" else settings.index.specter2_backend)

    def build(name: str) -> Embedder:
        if key == "minilm":
            from indexing.embedders.minilm import MiniLMEmbedder

            return MiniLMEmbedder(device=settings.index.device, theta=theta, backend=name,
                                  export_dir=settings.home / "models")
        from indexing.embedders.specter2 import Specter2Embedder

        return Specter2Embedder(base=settings.index.specter2_base, adapter=settings.index.specter2_adapter,
                                device=settings.index.device, theta=theta, backend=name,
                                export_dir=settings.home / "models")

    if not check:
        return build(requested)
    from indexing.embedders import check as backend_check

    revision: Callable[[str], str] | None = None  # SPECTER2's revision needs its folders resolved: loaded first
    if key == "minilm":
        from indexing.embedders.minilm import revision
    return backend_check.checked(key, requested, settings, build, lambda: auto_order(key, settings.index.device),
                                 revision)


def auto_order(key: str, device: str) -> list[str]:
    """The backends `auto` tries for this model, in order."""
    if key == "minilm":
        from indexing.embedders.minilm import auto_order as minilm_order

        return minilm_order(device)
    from indexing.embedders.runtime import auto_order as torch_order

    return torch_order(device)


__all__ = ["Embedder", "KNOWN", "join", "load_embedder"]
