"""Label writes that meet: an import whose labels another writer (the labelling view, another import) wrote between
the import's read of the existing labels and its write replaces them, as one label written twice does, instead of
failing on the unique (idea, paper, annotator) key (a 500 over HTTP when a sheet was imported twice at once)."""

import json

from sqlalchemy import event, select

from indexing.db import session_scope
from service.labels.models import Label
from service.labels.store import import_labels, write_label
from tests.factories import labels_store


def test_an_import_meeting_a_label_written_meanwhile_replaces_it(settings):
    planted = labels_store(settings.home)
    idea_id = next(iter(planted))
    p = planted[idea_id]
    rows = [{"run": "r1", "system": p["system"], "idea_id": idea_id, "paper_id": paper, "label": label,
             "annotator": "ann"} for paper, label in p["truth"].items()]
    first = rows[0]
    other_label = "none" if first["label"] != "none" else "direction"
    written: list[bool] = []
    with session_scope(settings.db_path) as s:
        def meanwhile(conn, cursor, statement, parameters, context, executemany) -> None:
            """Another connection writes the same idea, paper and annotator once the import has read and decided,
            just before the import's own write of the labels."""
            if written or not statement.startswith("INSERT INTO labels"):
                return
            written.append(True)
            with session_scope(settings.db_path) as other:
                write_label(other, run="r1", system=p["system"], idea_id=idea_id, paper_id=first["paper_id"],
                            label=other_label, annotator="ann")

        event.listen(s.connection(), "before_cursor_execute", meanwhile)
        report = import_labels(s, "".join(json.dumps(r) + "\n" for r in rows).encode(), name="sheet.jsonl")
    assert written and report.written and report.labels == len(rows)
    with session_scope(settings.db_path) as s:
        stored = {lab.paper_id: lab.label for lab in s.scalars(select(Label).where(Label.annotator == "ann"))}
    assert stored == {r["paper_id"]: r["label"] for r in rows}

