"""The migration files sort in the order of their chain, so reading them by name is reading them by history."""

from alembic.script import ScriptDirectory

from indexing.db import alembic_config
from tests.helpers import ROOT


def test_file_names_sort_by_chain_order(tmp_path):
    scripts = ScriptDirectory.from_config(alembic_config(tmp_path / "hindsight.db"))
    chain = [s for s in scripts.walk_revisions("base", "heads")][::-1]  # base first
    assert len(scripts.get_heads()) == 1
    files = sorted(p.name for p in (ROOT / "migrations" / "versions").glob("[0-9]*.py"))
    assert [s.path.rsplit("/", 1)[-1] for s in chain] == files
    # the numbers are the chain positions, one apart
    assert [int(name[:4]) for name in files] == list(range(1, len(files) + 1))
