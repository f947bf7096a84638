"""The one error of the LLM runtime: a model that cannot run or answer here, with the reason."""


from indexing.errors import DomainError


class ModelUnavailable(DomainError, RuntimeError):
    """The asked model cannot run here (not installed, no endpoint configured, budget spent, failed its probe);
    says why. A request that asks for it is refused by what this installation holds: 409."""

    status = 409
