"""Every page as served, gzip'd under HINDSIGHT_HOME/raw/<source>/<walk>/, for provenance."""

import gzip
import os
from pathlib import Path


def save(raw_dir: Path, source: str, walk: str, name: str, body: bytes) -> Path:
    """Write body atomically (temp file, fsync, rename) and return its path."""
    folder = raw_dir / source / walk
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{name}.json.gz"
    tmp = folder / f".{name}.{os.getpid()}.tmp"
    with tmp.open("wb") as fh:
        fh.write(gzip.compress(body, compresslevel=6, mtime=0))  # gzip(1)'s default: level 9 costs 3x the time for 4%
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    return final


def load(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


def clear_debris(raw_dir: Path, source: str, walk: str) -> None:
    """Temp files of a killed writer (the caller holds the walk's lock)."""
    for tmp in (raw_dir / source / walk).glob(".*.tmp"):
        tmp.unlink(missing_ok=True)
