"""The whole shared paperlists corpus through ingest (skipped when ../shared/data is absent)."""

from datetime import date

import pytest
from sqlalchemy import func, select

from indexing.db import session_scope
from indexing.ingest import ingest_path
from indexing.models import Paper
from tests.helpers import SHARED_DATA

PAPERLISTS = sorted((SHARED_DATA / "paperlists").glob("*/*.json"))
pytestmark = pytest.mark.skipif(not PAPERLISTS, reason="../shared/data/paperlists is absent")


def test_ingest_all_shared_paperlists(settings, capsys):
    reports = [ingest_path(p, db_path=settings.db_path) for p in PAPERLISTS]
    assert sum(r.read for r in reports) == 3136 and sum(r.rejected for r in reports) == 0
    with session_scope(settings.db_path) as s:
        total = s.scalar(select(func.count()).select_from(Paper))
        lo, hi = s.execute(select(func.min(Paper.citation_count), func.max(Paper.citation_count))).one()
        missing = s.scalar(select(func.count()).where(Paper.citation_count.is_(None)))
        in_window = s.scalar(select(func.count()).where(Paper.publication_date >= date(2023, 6, 1),
                                                         Paper.publication_date <= date(2025, 12, 31)))
    with capsys.disabled():
        print(f"\nshared paperlists: {total} papers, citations {lo}..{hi} ({missing} unknown), "
              f"{in_window} in the window 2023-06-01..2025-12-31")
    assert total == sum(r.inserted for r in reports)
    assert (lo, hi) == (0, 1068) or hi > lo
    assert in_window == total - 496  # only AISTATS 2023 (May) precedes the June cutoff
    again = [ingest_path(p, db_path=settings.db_path) for p in PAPERLISTS]
    assert sum(r.inserted for r in again) == 0 and sum(r.unchanged for r in again) == 3136
