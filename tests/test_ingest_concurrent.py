"""Two ingests of the same papers at once (two uploads of one API page, the CLI beside the server): the second reads
the store only after the first's transaction has committed, so it finds the papers and updates them, instead of
inserting them again and failing on the papers' unique id (a 500 over HTTP)."""

from indexing.ingest import ingest_bytes
from tests.helpers import FIXTURES, interleave


def test_a_second_ingest_of_the_same_papers_waits_for_the_first(settings):
    data = (FIXTURES / "native.jsonl").read_bytes()
    results = interleave(settings.db_path, lambda: ingest_bytes(data, "same.jsonl", db_path=settings.db_path),
                         "papers")
    first, second = results["first"], results["second"]
    assert not isinstance(first, Exception), first
    assert not isinstance(second, Exception), second
    assert (first.inserted, second.inserted, second.unchanged) == (3, 0, 3)  # type: ignore[attr-defined]
