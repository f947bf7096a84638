"""Shared helpers of the metrics tests: the shared InnoEval sample files and a JSONL writer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

SHARED_INNOEVAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "innoeval"


@pytest.fixture
def innoeval_sample() -> Callable[[str], Path]:
    """The path of a shared InnoEval sample file; the test is skipped without ../shared/data."""
    def find(name: str) -> Path:
        path = SHARED_INNOEVAL / name
        if not path.exists():
            pytest.skip(f"{path} absent (needs ../shared/data)")
        return path
    return find


@pytest.fixture
def write_jsonl() -> Callable[[Path, Iterable[Any]], Path]:
    """Write rows as one JSON object per line and give the path back."""
    def write(path: Path, rows: Iterable[Any]) -> Path:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        return path
    return write
