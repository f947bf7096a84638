"""The fitted matcher models and their registry.

A matcher entry holds, per decision (`realised`, `direction`) and per idea shape (`facets`: problem + method given;
`text`: free text only, which has only whole-idea features), a standardised logistic regression written out as plain
numbers (feature names, means, scales, weights, intercept) and the probability threshold picked at calibration.
Plain numbers, not a pickle: the entry is inspectable, diffable and copied whole into each manifest, so a published
index keeps scoring the same way whatever happens to the registry later.

Registry files: the shipped `registry/<model>-hybrid.json` beside this module and the user's
`$HINDSIGHT_HOME/matchers/<model>-hybrid.json` written by `hindsight calibrate --matcher hybrid`; the user's wins.
Entries are keyed by the embedder's revision (model weights + backend: torch and ONNX int8 vectors differ), so a
changed backend gets its own fit; a build whose revision has no entry uses the model's newest entry and records
`fitted_on_revision` beside the revision it runs with.
"""

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from indexing.matcher.reference import Lexicon, Spread, read_lexicon, read_spread
from indexing.registry import read_section, write_section_entry

SHIPPED_DIR = Path(__file__).with_name("registry")
DECISIONS = ("realised", "direction")
SHAPES = ("facets", "text")
# the models an entry holds, by its rule: problem_and_method (realised = direction AND method on the same paper) or,
# for entries fitted before it, realised_model (a realised model of its own; realised implies direction by rule)
RULES = {"problem_and_method": ("direction", "method"), "realised_model": ("realised", "direction")}
MATCHERS = ("dense", "hybrid")


def registry_name(model: str) -> str:
    return f"{model}-hybrid.json"


def user_registry(home: Path, model: str) -> Path:
    return Path(home) / "matchers" / registry_name(model)


@dataclass(frozen=True)
class Logistic:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    threshold: float

    @classmethod
    def from_dict(cls, d: dict) -> "Logistic":
        feats = tuple(d["features"])
        arrays = [np.asarray(d[k], dtype=np.float64) for k in ("mean", "scale", "coef")]
        if not feats or any(a.shape != (len(feats),) for a in arrays) or not np.all(arrays[1] > 0):
            raise ValueError("matcher model: features, mean, scale and coef must be equal-length, scale > 0")
        threshold = float(d["threshold"])
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"matcher model: threshold {threshold} outside [0, 1]")
        return cls(feats, arrays[0], arrays[1], arrays[2], float(d["intercept"]), threshold)

    def as_dict(self) -> dict:
        return {"features": list(self.features), "mean": _r(self.mean), "scale": _r(self.scale),
                "coef": _r(self.coef), "intercept": round(self.intercept, 6), "threshold": round(self.threshold, 6)}

    def proba(self, x: np.ndarray) -> np.ndarray:
        z = ((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))


def _r(a: np.ndarray) -> list[float]:
    return [round(float(v), 6) for v in a]


@dataclass(frozen=True)
class HybridMatcher:
    """One registry entry, loaded: four logistic models and what they were fitted on."""

    entry: dict

    def model(self, decision: str, shape: str) -> Logistic:
        return Logistic.from_dict(self.entry["decisions"][decision][shape])

    @property
    def rule(self) -> str:
        return str(self.entry.get("rule", "realised_model"))

    def probabilities(self, shape: str, cands) -> dict[str, np.ndarray]:
        """p_direction, p_realised (and p_method) of every candidate; p_realised = p_direction * p_method under the
        problem_and_method rule."""
        out = {m: (self._models[(m, shape)].proba(cands.matrix(self._models[(m, shape)].features))
                   if cands.positions else np.zeros(0)) for m in RULES[self.rule]}
        if self.rule == "problem_and_method":
            out["realised"] = out["direction"] * out["method"]
        return out

    def decisions(self, shape: str, p: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(realised, direction) per candidate, before realised implies direction is applied (decide.rank)."""
        t = {m: self._models[(m, shape)].threshold for m in RULES[self.rule]}
        direction = p["direction"] >= t["direction"]
        if self.rule == "problem_and_method":
            return direction & (p["method"] >= t["method"]), direction
        return p["realised"] >= t["realised"], direction

    def _folders(self) -> list[Path]:
        """Where the entry's reference files are: beside the registry that holds it, else the shipped one."""
        shown = self.entry.get("registry")
        if not shown:
            return [SHIPPED_DIR]
        path = Path(str(shown))
        return [(path if path.is_absolute() else SHIPPED_DIR.parents[2] / path).parent, SHIPPED_DIR]

    @cached_property
    def lexicon(self) -> Lexicon | None:
        """The fit's reference lexicon (None for entries fitted before pair-only features)."""
        name = self.entry.get("lexicon")
        return read_lexicon(str(name), self._folders()) if name else None

    @cached_property
    def spread(self) -> Spread | None:
        """The fit's reference spread of paper vectors (None for entries fitted before pair-only features)."""
        name = self.entry.get("spread")
        return read_spread(str(name), self._folders()) if name else None

    @cached_property
    def _models(self) -> dict[tuple[str, str], Logistic]:
        return {(m, s): self.model(m, s) for m in RULES[self.rule] for s in SHAPES}

    @property
    def version(self) -> str:
        return str(self.entry["version"])

    @property
    def candidates(self) -> int:
        return int(self.entry.get("candidates", 50))

    def thresholds(self) -> dict:
        d = self.entry["decisions"]
        return {m: {shape: d[m][shape]["threshold"] for shape in SHAPES} for m in RULES[self.rule]}

    @classmethod
    def from_entry(cls, entry: dict) -> "HybridMatcher":
        """Validate an entry (from a registry or a manifest); ValueError names what is wrong."""
        if not isinstance(entry, dict) or not isinstance(entry.get("decisions"), dict) or "version" not in entry:
            raise ValueError("matcher entry lacks its version or decisions")
        if entry.get("rule", "realised_model") not in RULES:
            raise ValueError(f"matcher entry rule {entry.get('rule')!r} is not one of {', '.join(RULES)}")
        for dec in RULES[entry.get("rule", "realised_model")]:
            for shape in SHAPES:
                try:
                    Logistic.from_dict(entry["decisions"][dec][shape])
                except (KeyError, TypeError) as exc:
                    raise ValueError(f"matcher entry lacks decisions.{dec}.{shape} ({exc})") from None
        matcher = cls(entry)
        try:  # read once, when the version loads: a missing or changed reference file is a damaged entry
            _ = matcher.lexicon, matcher.spread
        except (LookupError, ValueError, TypeError) as exc:
            raise ValueError(str(exc)) from None
        return matcher


def read_registry(path: Path) -> dict:
    """{revision: entry}; an absent file is empty, a malformed one an error naming the file."""
    return read_section(path, "revisions", "matcher registry")


def find_entry(model: str, revision: str, *, home: Path | None = None) -> dict | None:
    """The entry for this model and revision (user's registry first), else the newest for the model, else None."""
    paths = ([user_registry(home, model)] if home is not None else []) + [SHIPPED_DIR / registry_name(model)]
    registries = [(p, read_registry(p)) for p in paths]
    for path, entries in registries:
        if revision in entries:
            return {**entries[revision], "registry": _shown(path), "fitted_on_revision": revision}
    for path, entries in registries:
        if entries:
            rev, entry = max(entries.items(), key=lambda kv: kv[1].get("written", ""))
            return {**entry, "registry": _shown(path), "fitted_on_revision": rev}
    return None


def _shown(path: Path) -> str:
    """A registry's name as manifests show it: the shipped one relative to the package, a user's in full."""
    try:
        return str(path.relative_to(SHIPPED_DIR.parents[2]))
    except ValueError:
        return str(path)


def write_entry(path: Path, revision: str, entry: dict) -> dict:
    """Set the revision's entry (atomic replace of the file, other entries kept); returns what was written."""
    return write_section_entry(path, "revisions", "matcher registry", revision, entry)
