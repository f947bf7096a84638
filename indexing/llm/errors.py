"""The one error of the LLM runtime: a model that cannot run or answer here, with the reason."""


class ModelUnavailable(RuntimeError):
    """The asked model cannot run here (not installed, no endpoint configured, budget spent, failed its probe);
    says why."""
