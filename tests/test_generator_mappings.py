"""scripts/generator_mappings.py: it imports against the current package layout, and its ceiling figures (judged
same-problem pairs listed in the top k, p_direction's AUC over the judged papers) count what they say."""

from types import SimpleNamespace

from tests.helpers import load_script




def result(idea: str, matches: list[tuple[str, float]]) -> SimpleNamespace:
    return SimpleNamespace(id=idea, matches=[SimpleNamespace(paper_id=p, p_direction=d) for p, d in matches])


def test_ceiling_counts_listed_pairs_and_orders_judged_papers():
    gm = load_script("generator_mappings")
    labels = {"a": {"same_problem": ["p1", "p9"], "reviewed": ["p1", "p2", "p3", "p9"]},
              "b": {"same_problem": ["q1"], "reviewed": ["q1", "q2"]},
              "c": {"same_problem": [], "reviewed": ["r1"]}}
    results = [result("a", [("p2", 0.9), ("p1", 0.8), ("x", 0.7), ("p3", 0.1)]),  # p9 is not listed
               result("b", [("q1", 0.6), ("q2", 0.2)]),
               result("c", [("r1", 0.99)])]  # no same-problem paper: not counted
    out = gm.ceiling(results, labels)
    assert out["same_problem_pairs"] == 3
    assert out["listed_in_top_k"] == 2 / 3
    assert out["judged_listed"] == 5  # p2, p1, p3, q1, q2 ("x" was not reviewed)
    # positives p1 (0.8), q1 (0.6) against p2 (0.9), p3 (0.1), q2 (0.2): 4 of 6 pairs ordered right
    assert abs(out["p_direction_auc"] - 4 / 6) < 1e-9
