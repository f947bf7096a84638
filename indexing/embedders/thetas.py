"""The registry of calibrated thresholds, per model key, consulted by `load_embedder`.

Two layers: the file shipped beside this module (`thetas.json`, calibrated by the maintainers on the shared
corpus) and the user's own `$HINDSIGHT_HOME/thetas.json`, written by `hindsight calibrate --write`; the user's entry
wins. An entry records how it was derived (pairs, target precision, precision/recall reached, model revision).
A changed theta takes effect at the next index build: a published index keeps the theta in its manifest.
"""

from pathlib import Path

from indexing.registry import read_section, write_section_entry

SHIPPED = Path(__file__).with_name("thetas.json")
FILENAME = "thetas.json"


def user_registry(home: Path) -> Path:
    return Path(home) / FILENAME


def read_registry(path: Path) -> dict:
    """{model key: entry}; an absent file is empty, a malformed one an error naming the file."""
    return read_section(path, "models", "theta registry")


def registry_entry(key: str, *, home: Path | None = None) -> dict | None:
    """The user's entry for this model, else the shipped one, else None."""
    for path in ([user_registry(home)] if home is not None else []) + [SHIPPED]:
        entry = read_registry(path).get(key)
        if entry is not None:
            theta = entry.get("theta")
            if not isinstance(theta, (int, float)) or not -1.0 <= theta <= 1.0:
                raise ValueError(f"theta registry {path}: {key}.theta must be a number in [-1, 1], got {theta!r}")
            return {**entry, "registry": str(path)}
    return None


def registry_theta(key: str, *, home: Path | None = None) -> float | None:
    entry = registry_entry(key, home=home)
    return float(entry["theta"]) if entry else None


def write_entry(path: Path, key: str, entry: dict) -> dict:
    """Set the model's entry (atomic replace of the file, other entries kept); returns what was written."""
    return write_section_entry(path, "models", "theta registry", key, entry)
