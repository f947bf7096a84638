"""The real-text benchmarks' own reading and counting: the Idea Novelty Checker's CSV as its repository writes it
(a BOM, CRLF, quoted fields with commas and Markdown bold), and pair precision and recall against judged files."""

import csv
import io

from tests.helpers import load_script


def _inc_csv(rows: list[tuple[str, str]]) -> bytes:
    out = io.StringIO()
    fields = ["idea", "domain"] + [f"paper{k}_{f}" for k in range(10) for f in ("abstract", "title", "url")] + ["class"]
    w = csv.DictWriter(out, fieldnames=fields, lineterminator="\r\n")
    w.writeheader()
    for n, (idea, label) in enumerate(rows):
        row = {"idea": idea, "domain": "['Computer Science']", "class": label}
        for k in range(10):
            row |= {f"paper{k}_title": f"Paper {n}-{k}, a study", f"paper{k}_abstract": f"We study {n}, {k}.",
                    f"paper{k}_url": f"https://www.semanticscholar.org/paper/{n:02d}{k:02d}abc"}
        w.writerow(row)
    return ("\ufeff" + out.getvalue()).encode()


def test_the_novelty_checker_csv_is_read_as_its_repository_writes_it(tmp_path):
    inc = load_script("novelty_checker", folder="bench")
    path = tmp_path / "train.csv"
    path.write_bytes(_inc_csv([("Develop a **joint framework**, for reviews.", "novel"),
                               ("A tool that, given papers, suggests more.", "not novel")]))
    ideas, papers = inc.read_split(path)
    assert [i["text"] for i in ideas] == ["Develop a joint framework, for reviews.",
                                         "A tool that, given papers, suggests more."]
    assert [i["not_novel"] for i in ideas] == [False, True] and ideas[0]["id"] == "train-1"
    assert len(papers) == 20 and papers["0003abc"]["title"] == "Paper 0-3, a study"
    assert {p["publication_date"] for p in papers.values()} == {"2023-06-02"}


def test_pair_precision_and_recall_count_judged_pairs_only():
    rt = load_script("real_text", folder="bench")
    results = [{"id": "a", "matches": [{"paper_id": "p1", "direction": True, "realised": True},
                                       {"paper_id": "p2", "direction": True, "realised": False},
                                       {"paper_id": "x9", "direction": True, "realised": False}],
                "prior_art": {"matches": [{"paper_id": "q1", "direction": True, "realised": False}]}}]
    labels = {"a": {"reviewed": ["p1", "p2", "p3"], "same_problem": ["p1", "p3"], "same_problem_and_approach": ["p1"]}}
    forward = rt.pair_figures(results, labels, "forward")
    assert forward["direction"]["precision"]["k"] == 1 and forward["direction"]["precision"]["n"] == 2
    assert forward["direction"]["recall"]["n"] == 2 and forward["direction"]["unjudged_calls"] == 1
    assert forward["realised"]["precision"]["value"] == 1.0 and forward["realised"]["recall"]["value"] == 1.0
    back = rt.pair_figures(results, {"a": {"reviewed": ["q1"], "same_problem": [], "same_problem_and_approach": []}},
                           "lookback")
    assert back["direction"]["precision"]["value"] == 0.0 and back["direction"]["recall"]["n"] == 0
