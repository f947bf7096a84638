"""Embedder registry: one factory picks a model by key."""

from indexing.embedders.base import Embedder, join
from indexing.settings import Settings

KNOWN = ("minilm", "specter2")


def load_embedder(key: str, settings: Settings, *, theta: float | None = None, backend: str | None = None) -> Embedder:
    """Load the named embedder; theta defaults to the model registry's calibrated value (see thetas.py), else the
    model's own constant; backend defaults to the model's setting (`auto` picks the fastest measured one)."""
    if theta is None and key in KNOWN:
        from indexing.embedders.thetas import registry_theta

        theta = registry_theta(key, home=settings.home)
    if key == "minilm":
        from indexing.embedders.minilm import MiniLMEmbedder

        return MiniLMEmbedder(device=settings.device, theta=theta, backend=backend or settings.minilm_backend,
                              export_dir=settings.home / "models")
    if key == "specter2":
        from indexing.embedders.specter2 import Specter2Embedder

        return Specter2Embedder(base=settings.specter2_base, adapter=settings.specter2_adapter,
                                device=settings.device, theta=theta, backend=backend or settings.specter2_backend,
                                export_dir=settings.home / "models")
    raise ValueError(f"unknown model {key!r}; known: {', '.join(KNOWN)}")


__all__ = ["Embedder", "KNOWN", "join", "load_embedder"]
