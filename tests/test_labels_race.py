"""Label writes that meet. An import whose labels another writer (the labelling view, another import) wrote between
the import's read of the existing labels and its write replaces them, as one label written twice does, instead of
failing on the unique (idea, paper, annotator) key (a 500 over HTTP when a sheet was imported twice at once)."""

import json

from sqlalchemy import event, func, select

from indexing.db import session_scope
from indexing.models import Idea, Run, Score
from service.labels.draws import draw
from service.labels.models import DrawIdea, Label
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


def test_a_draw_meeting_another_draw_of_the_run_draws_from_what_is_left(settings):
    """Two draws of one run at once (two tabs, a retried request) both read the ideas not drawn yet; the one that
    writes second draws again from what the first left instead of failing on the draws' disjointness (a 500)."""
    labels_store(settings.home)
    with session_scope(settings.db_path) as s:
        scored = s.scalar(select(func.count()).select_from(Score).join(Idea, Idea.pk == Score.idea_pk)
                          .join(Run, Run.id == Idea.run_id).where(Run.label == "r1"))
    other_draw: list[dict] = []
    with session_scope(settings.db_path) as s:
        def meanwhile(conn, cursor, statement, parameters, context, executemany) -> None:
            """The other draw is stored once this one has read what is left, before it writes."""
            if other_draw or not statement.startswith("INSERT INTO label_draws"):
                return
            with session_scope(settings.db_path) as other:
                other_draw.append(draw(other, run="r1", n=3, seed=1))

        event.listen(s.connection(), "before_cursor_execute", meanwhile)
        mine = draw(s, run="r1", n=10_000, seed=2)
    theirs = other_draw[0]
    assert len(theirs["draws"]) == len(mine["draws"]) >= 2
    ours = [i for d in mine["draws"] for i in d["ideas"]]
    others = [i for d in theirs["draws"] for i in d["ideas"]]
    assert not set(ours) & set(others) and len(ours) + len(others) == scored
    assert all(d["available"] == d["n"] for d in mine["draws"])
    with session_scope(settings.db_path) as s:
        assert s.scalar(select(func.count()).select_from(DrawIdea)) == scored
