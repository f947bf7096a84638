"""Two annotators' agreement counts only the pairs both labelled: a reader who judged 8 candidates per idea against
a model asked about 3 is compared on those 3, not on 8 with the model's 5 unseen pairs read as its `none`."""

import json

from indexing.db import session_scope
from service.analyses.selection import Selection
from service.cli.label_tables import kappa_line
from service.labels.agreement import annotators
from service.labels.estimates import labelled_summary
from service.labels.store import import_labels
from tests.factories import labels_store


def _labels(per_idea: dict[int, dict[str, str]]) -> dict[int, dict[str, tuple[str, None]]]:
    return {pk: {p: (lab, None) for p, lab in papers.items()} for pk, papers in per_idea.items()}


def test_kappa_counts_only_the_pairs_both_labelled():
    # ten ideas; the reader judged 8 candidates each and finds a same-problem paper at rank 6 for every idea (past
    # the model's 3) and at rank 1 for ideas 0-4; the model, asked about ranks 1-3, says direction at rank 1 for
    # ideas 0-2 and 5-6 and at rank 2 for idea 9
    reader, model = {}, {}
    for i in range(10):
        reader[i] = {f"i{i}-c{r}": "none" for r in range(1, 9)} | {f"i{i}-c6": "direction"}
        if i < 5:
            reader[i][f"i{i}-c1"] = "direction"
        model[i] = {f"i{i}-c{r}": "none" for r in range(1, 4)}
        if i in (0, 1, 2, 5, 6):
            model[i][f"i{i}-c1"] = "direction"
        if i == 9:
            model[i]["i9-c2"] = "direction"
    (k,) = annotators({"model": _labels(model), "reader": _labels(reader)}, {}, shown=3)
    assert (k["a"], k["b"], k["ideas"]) == ("model", "reader", 10)
    # 30 pairs both labelled, 25 agree, kappa 0.44; the old union of the two pair sets read the reader's 50 pairs
    # past rank 3 as the model's none: 80 pairs, 65 agree, kappa 0.20
    assert (k["pair"]["n"], k["pair"]["agree"]) == (30, 25)
    assert (k["pair"]["only_a"], k["pair"]["only_b"]) == (0, 50)
    assert round(k["pair"]["kappa"], 4) == 0.4444
    # no realised label: per pair, direction coincides with the three labels
    assert k["pair_decision"]["direction"] == {x: k["pair"][x] for x in ("n", "agree", "kappa")}
    assert k["pair_decision"]["realised"]["kappa"] is None  # one category only
    # per idea, over the pairs both labelled: the reader's rank-6 papers do not make every idea a direction idea
    # (the old count: 6 of 10, the reader "finding" a direction paper for every idea)
    assert (k["idea"]["direction"]["n"], k["idea"]["direction"]["agree"]) == (10, 5)
    assert "pair kappa 0.44 (25 of 30 pairs both labelled agree; 50 labelled by one only: 0 model, 50 reader)" \
        in kappa_line(k)


def test_a_judged_reader_against_a_shorter_sheet(settings):
    """Through the store: judged imports write an explicit none for every reviewed paper; a reader with all 5
    candidates reviewed and another with the first 2 are compared on those 2 per idea."""
    planted = labels_store(settings.home, per_system=6)
    ideas = [i for i in planted if planted[i]["system"] == "sys-a"]

    def judged(reviewed: int, flip: bool) -> bytes:
        rows = []
        for n, i in enumerate(ideas):
            papers = list(planted[i]["truth"])[:reviewed]
            same = [p for p in papers if planted[i]["truth"][p] != "none"]
            if flip and n == 0:
                same = [p for p in papers if (p in same) != (p == papers[0])]  # the first pair called otherwise
            rows.append({"idea": i, "system": "sys-a", "reviewed": papers, "same_problem": same,
                         "same_problem_and_approach": [p for p in same if planted[i]["truth"][p] == "realised"]})
        return "".join(json.dumps(r) + "\n" for r in rows).encode()

    with session_scope(settings.db_path) as s:
        import_labels(s, judged(5, False), name="full.jsonl", run="r1", annotator="full")
        import_labels(s, judged(2, True), name="short.jsonl", run="r1", annotator="short")
        answer = labelled_summary(s, selection=Selection(), shown=5)
    (k,) = answer["agreement"]["annotators"]
    assert (k["a"], k["b"], k["ideas"]) == ("full", "short", 6)
    assert k["pair"]["n"] == 12
    assert (k["pair"]["only_a"], k["pair"]["only_b"]) == (18, 0)
    assert k["pair"]["agree"] == 11  # only the first idea's first pair differs
