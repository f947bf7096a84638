"""How a verdict becomes the two decisions (a documented rule, not a fit: see docs/matching.md, "The verifier")."""

from dataclasses import asdict, dataclass

from indexing.matcher.verifier.base import Verdict


@dataclass(frozen=True)
class VerifierRule:
    """direction when P(direction) >= t_direction; realised when in addition P(realised) >= t_realised (so every
    realised match is a direction match) and the idea can be realised at all (ranges.check)."""

    version: str = "verifier-rule-1"
    t_direction: float = 0.5
    t_realised: float = 0.5

    def decide(self, verdict: Verdict, *, can_realise: bool = True) -> tuple[bool, bool]:
        """(realised, direction) of one read pair."""
        direction = verdict.p_direction >= self.t_direction
        return direction and can_realise and verdict.p_realised >= self.t_realised, direction

    def thresholds(self) -> dict[str, float | str]:
        return asdict(self)


DEFAULT_RULE = VerifierRule()
