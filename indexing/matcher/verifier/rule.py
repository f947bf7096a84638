"""How a verdict becomes the two decisions.

Uncalibrated (a verifier with no fit, e.g. a hosted model): direction when P(direction) >= 0.5, realised when in
addition P(realised) >= 0.5. Calibrated (a fit shipped for the verifier revision and the hybrid matcher, made by
`hindsight calibrate --verifier`): two small logistic models over the logits of the verifier's probabilities and
the embedding matcher's p_direction / p_method, each with its threshold. Either way every realised match is a
direction match, and an idea that cannot be realised (ranges.check) realises nothing.
"""

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexing.matcher.model import Logistic
from indexing.registry import read_section, write_section, write_section_entry
from indexing.matcher.verifier.base import Verdict

REGISTRY = Path(__file__).with_name("fits.json")
SECTION, WHAT = "fits", "verifier fit registry"
EPS = 1e-4


def logit(p: float | None) -> float:
    q = min(max(0.5 if p is None else float(p), EPS), 1 - EPS)
    return math.log(q / (1 - q))


def features(verdict: Verdict, embedding: dict[str, float | None] | None) -> dict[str, float]:
    """What the fitted models read: logits of the verifier's and the embedding matcher's probabilities."""
    e = embedding or {}
    return {"v_direction": logit(verdict.p_direction), "v_realised": logit(verdict.p_realised),
            "p_direction": logit(e.get("p_direction")), "p_method": logit(e.get("p_method"))}


@dataclass(frozen=True)
class VerifierRule:
    version: str = "verifier-rule-1"
    t_direction: float = 0.5
    t_realised: float = 0.5
    direction_model: Logistic | None = None
    realised_model: Logistic | None = None

    @property
    def calibrated(self) -> bool:
        return self.direction_model is not None and self.realised_model is not None

    def probabilities(self, verdict: Verdict, embedding: dict[str, float | None] | None = None) -> tuple[float, float]:
        """(p direction, p realised) as the rule reads them."""
        if self.direction_model is None or self.realised_model is None:
            return verdict.p_direction, verdict.p_realised
        f = features(verdict, embedding)
        d = self.direction_model.proba(np.array([[f[n] for n in self.direction_model.features]]))[0]
        r = self.realised_model.proba(np.array([[f[n] for n in self.realised_model.features]]))[0]
        return float(d), float(r)

    def decide(self, verdict: Verdict, *, can_realise: bool = True,
               embedding: dict[str, float | None] | None = None) -> tuple[bool, bool]:
        """(realised, direction) of one read pair."""
        p_d, p_r = self.probabilities(verdict, embedding)
        direction = p_d >= self.t_direction
        return direction and can_realise and p_r >= self.t_realised, direction

    def thresholds(self) -> dict:
        return {"rule": self.version, "calibrated": self.calibrated, "direction": round(self.t_direction, 6),
                "realised": round(self.t_realised, 6)}

    def as_dict(self) -> dict:
        models = {"direction_model": self.direction_model, "realised_model": self.realised_model}
        return {**self.thresholds(), **{k: m.as_dict() if m else None for k, m in models.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> "VerifierRule":
        return cls(version=d["rule"], t_direction=float(d["direction"]), t_realised=float(d["realised"]),
                   direction_model=Logistic.from_dict(d["direction_model"]) if d.get("direction_model") else None,
                   realised_model=Logistic.from_dict(d["realised_model"]) if d.get("realised_model") else None)


DEFAULT_RULE = VerifierRule()


def fit_key(revision: str, matcher_version: str | None) -> str:
    return f"{revision}|{matcher_version or 'dense'}"


def rule_for(revision: str, matcher_version: str | None, registries: tuple[Path, ...] = (REGISTRY,)) -> VerifierRule:
    """The fit made for this verifier revision over this matcher's candidates (a home's own registry first), else the
    uncalibrated rule."""
    key = fit_key(revision, matcher_version)
    for path in registries:
        entry = read_fits(path).get(key)
        if entry:
            return VerifierRule.from_dict(entry)
    return DEFAULT_RULE


def flat_fits(path: Path) -> dict | None:
    """The fits of a file in the flat layout `calibrate --verifier` wrote before fits went through the registry's
    writer (None for any other file, a malformed one included)."""
    try:
        data = json.loads(path.read_text()) if path.is_file() else None
    except ValueError:
        return None
    if isinstance(data, dict) and SECTION not in data and all("|" in key for key in data):
        return data
    return None


def read_fits(path: Path) -> dict:
    """{fit key: entry} of a verifier fit registry; an absent file is empty. The file is read once, unless it is in
    the flat layout."""
    try:
        return read_section(path, SECTION, WHAT)
    except ValueError:
        flat = flat_fits(path)
        if flat is None:
            raise
        return flat


def write_fit(path: Path, revision: str, matcher_version: str | None, entry: dict) -> dict:
    """Set one fit (atomic replace, the other fits kept, a flat-layout file carried over); returns what was written."""
    flat = flat_fits(path)
    if flat:
        write_section(path, SECTION, flat)
    return write_section_entry(path, SECTION, WHAT, fit_key(revision, matcher_version), entry)
