"""scripts/prior_art_examples.py: the acceptance checks count as its docstring says (the realised ones are the ideas
realised after the cutoff when scored before the year, followed to the later cutoff; a vague idea passes only when
unrealised at both), and a check fails when its goal is missed or nothing is there to count."""

import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("prior_art_examples")


def _side(cls: str, after: tuple[str, ...] = (), before: tuple[str, ...] = ()) -> dict:
    return {"class": cls, "class_direction": cls, "after": list(after), "before": list(before),
            "direction_after": list(after), "direction_before": list(before)}


def _case(n_ok: int, bad_after: str = "already_published", vague_after: str = "unrealised"):
    ideas: list[dict] = []
    before: dict[str, dict] = {}
    after: dict[str, dict] = {}
    for i in range(n_ok):  # paraphrases realised by their source after the cutoff, then found in the past
        ideas.append({"id": f"p{i}", "kind": "paraphrase", "source_paper_id": f"s{i}"})
        before[f"p{i}"] = _side("anticipated", after=(f"s{i}",))
        after[f"p{i}"] = _side("already_published", before=(f"s{i}",))
    ideas.append({"id": "p-last", "kind": "paraphrase", "source_paper_id": "s-last"})
    before["p-last"] = _side("anticipated", after=("s-last",))
    after["p-last"] = _side(bad_after)
    ideas.append({"id": "l0", "kind": "loose", "source_paper_id": "x"})  # missed on both sides: not a realised one
    before["l0"], after["l0"] = _side("unrealised"), _side("unrealised")
    for i in range(19):
        ideas.append({"id": f"v{i}", "kind": "vague", "source_paper_id": None})
        before[f"v{i}"], after[f"v{i}"] = _side("unrealised"), _side("unrealised")
    ideas.append({"id": "v19", "kind": "vague", "source_paper_id": None})
    before["v19"], after["v19"] = _side("unrealised"), _side(vague_after)
    return ideas, {"before": before, "after": after}


def test_the_checks_pass_on_the_goals_and_count_the_realised_ones_by_the_matcher(script):
    out = script.count_checks(*_case(19))
    checks = out["checks"]
    assert out["realised_by_matcher"]["n"] == 20  # the missed loose idea is not among them
    assert checks["realised_anticipated_before"]["value"] == 1.0
    assert checks["same_published_or_recalled_after"]["value"] == 1.0
    assert checks["same_anticipated_after"]["value"] == 0.0
    assert checks["vague_unrealised_both"]["value"] == 1.0 and out["passed"]
    assert out["realised_by_dev_set"]["n"] == 21 and out["realised_by_dev_set"]["anticipated_before"] == 20 / 21
    assert out["realised_by_matcher"]["source_realises_before"] == 19 / 20


def test_one_anticipated_of_twenty_after_the_year_fails_the_five_percent_goal_only_past_it(script):
    assert script.count_checks(*_case(19, bad_after="anticipated"))["checks"]["same_anticipated_after"]["pass"]
    out = script.count_checks(*_case(9, bad_after="anticipated"))  # 1 of 10: 10%
    assert out["checks"]["same_anticipated_after"]["value"] == 0.1 and not out["passed"]
    assert out["checks"]["same_published_or_recalled_after"]["value"] == 0.9


def test_a_vague_idea_counts_once_and_fails_when_realised_on_either_side(script):
    out = script.count_checks(*_case(19, vague_after="already_published"))
    assert out["vague"]["unrealised_both"] == 19 and out["vague"]["failures"] == {"v19": ["unrealised",
                                                                                         "already_published"]}
    assert out["checks"]["vague_unrealised_both"]["value"] == 0.95 and out["checks"]["vague_unrealised_both"]["pass"]


def test_nothing_realised_before_is_a_failed_check_not_a_pass(script):
    ideas, got = _case(3)
    for side in got.values():  # the index held nothing before the cutoff: every class unknown
        for i in side:
            side[i] = _side("unknown")
    out = script.count_checks(ideas, got)
    assert out["realised_by_matcher"]["n"] == 0
    assert out["checks"]["realised_anticipated_before"]["value"] is None and not out["passed"]


def test_the_direction_level_correlation_is_the_analyses_spearman_with_its_interval(script, tmp_path):
    import json

    from service.analyses.stats import spearman

    had = [True, True, True, False, False, False, False, True]
    novelty = [2.0, 3.0, 1.0, 8.0, 7.0, 9.0, 6.0, 4.0]
    scored = tmp_path / "score.json"
    scored.write_text(json.dumps({"ideas": [{"id": f"i{n}", "prior_art": {"direction_before": h}}
                                            for n, h in enumerate(had)] + [{"id": "unrated", "prior_art": {
                                                "direction_before": True}}]}))
    out = script.direction_prior_art_vs({f"i{n}": v for n, v in enumerate(novelty)}, scored)
    expected = spearman([float(h) for h in had], novelty)
    assert (out["n"], out["had_direction_prior_art"]) == (8, 4)
    assert out["rho"] == expected["rho"] < 0 and out["ci"] == expected["ci"] and out["p"] == expected["p"]
    assert out["ci"][0] < out["rho"] < out["ci"][1]
    assert (out["mean_novelty_with"], out["mean_novelty_without"]) == (2.5, 7.5)
    few = script.direction_prior_art_vs({"i0": 1.0, "i1": 2.0, "i2": 3.0}, scored)
    assert few == {"n": 3, "rho": None}
