"""JSON registries of fitted values (thetas per model, hybrid matchers per revision): one object of entries each."""

import json
import os
from datetime import datetime, timezone
from pathlib import Path


def read_section(path: Path, section: str, what: str) -> dict:
    """{key: entry} of the file's `section`; an absent file is empty, a malformed one an error naming the file."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}
    except ValueError as exc:
        raise ValueError(f"{what} {path} is not valid JSON ({exc}); fix or delete it") from None
    entries = data.get(section) if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise ValueError(f"{what} {path} must be an object with a {section!r} object")
    return entries


def write_section_entry(path: Path, section: str, what: str, key: str, entry: dict) -> dict:
    """Set one entry (atomic replace of the file, the other entries kept); returns what was written."""
    path = Path(path)
    entries = read_section(path, section, what)
    entry = {**entry, "written": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    entries[key] = entry
    write_section(path, section, entries)
    return entry


def write_section(path: Path, section: str, entries: dict) -> None:
    """Replace the file with `section` holding entries, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({section: entries}, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
