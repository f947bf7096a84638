"""The verifier's calibration (indexing.matcher.verifier.fit) and rule: pure functions over read pairs."""

import json

import numpy as np

from indexing.matcher.verifier.base import Verdict
from indexing.matcher.verifier.fit import Read, fit_rule, nested, report
from indexing.matcher.verifier.rule import DEFAULT_RULE, VerifierRule, fit_key, rule_for, write_fit

KINDS = ("paraphrase", "loose", "hard_negative", "method_swap", "vague")


def reads(fields=("a", "b", "c"), per_kind=6, seed=0, flip: str | None = None) -> list[Read]:
    """Top-3 reads whose verdicts separate the source as a good reader would (field `flip`: the reverse)."""
    rng = np.random.default_rng(seed)
    out = []
    for f in fields:
        for kind in KINDS:
            for n in range(per_kind):
                source = None if kind == "vague" else 10
                positions = [10, 11, 12] if source is not None else [20, 21, 22]
                verdicts, embedding = [], []
                for p in positions:
                    same_problem = p == source
                    same_method = same_problem and kind in ("paraphrase", "loose")
                    if f == flip:
                        same_problem, same_method = not same_problem, not same_method
                    d = 0.75 if same_problem else 0.45
                    r = 0.72 if same_method else 0.48
                    verdicts.append(Verdict(float(np.clip(d + rng.normal(0, 0.04), 0, 1)),
                                            float(np.clip(r + rng.normal(0, 0.04), 0, 1)), "logprobs"))
                    embedding.append({"p_direction": 0.6 if p == source else 0.3, "p_method": 0.5})
                out.append(Read.of(idea_id=f"{f}-{kind}-{n}", kind=kind, field=f, style="short", positions=positions,
                                   source=source, verdicts=verdicts, embedding=embedding))
    return out


def rate(outcomes, kind, metric):
    vals = [o.values()[metric] for o in outcomes if o is not None and o.kind == kind]
    return sum(vals) / len(vals)


def test_nested_out_of_fold_separates_the_kinds_and_holds_the_negatives():
    rs = reads()
    outcomes, thresholds = nested(rs, target=0.05)
    assert set(thresholds) == {"a", "b", "c"}
    assert rate(outcomes, "paraphrase", "source_realised") == 1.0
    assert rate(outcomes, "hard_negative", "any_realised") == 0.0
    assert rate(outcomes, "method_swap", "any_realised") == 0.0
    assert rate(outcomes, "hard_negative", "source_direction") == 1.0
    assert rate(outcomes, "vague", "any_direction") <= 0.2


def test_a_held_out_field_is_judged_by_models_that_never_saw_it():
    # field c reads everything backwards: fitted on a and b, its out-of-fold figures must be bad, while an in-sample
    # fit would have learned some of c's reversal
    outcomes, _ = nested(reads(flip="c"), target=0.05)
    held = [o for o in outcomes if o is not None and o.kind == "paraphrase" and o.source is not None]
    c_rate = np.mean([o.values()["source_realised"] for o in held[12:]])  # field c comes last
    assert c_rate == 0.0


def test_the_fitted_rule_round_trips_through_the_registry_and_realised_implies_direction(tmp_path):
    rule = fit_rule(reads(), target=0.05, version="verifier-fit-test")
    path = tmp_path / "verifier-fits.json"
    path.write_text(json.dumps({fit_key("local:abc:p1", "hybrid-1"): rule.as_dict()}))
    back = rule_for("local:abc:p1", "hybrid-1", (path,))
    assert back.as_dict() == rule.as_dict() and back.calibrated
    assert rule_for("local:other:p1", "hybrid-1", (path,)) is DEFAULT_RULE
    strong = Verdict(0.8, 0.8, "logprobs")
    assert back.decide(strong, embedding={"p_direction": 0.6, "p_method": 0.5}) == (True, True)
    assert back.decide(strong, can_realise=False, embedding={"p_direction": 0.6, "p_method": 0.5}) == (False, True)
    weak = Verdict(0.4, 0.9, "logprobs")
    realised, direction = back.decide(weak, embedding={"p_direction": 0.3, "p_method": 0.5})
    assert not direction and not realised


def test_the_uncalibrated_rule_reads_the_probabilities_at_one_half():
    assert DEFAULT_RULE.decide(Verdict(0.6, 0.4, "parsed")) == (False, True)
    assert DEFAULT_RULE.decide(Verdict(0.4, 0.9, "parsed")) == (False, False)
    assert VerifierRule().thresholds()["calibrated"] is False


def test_the_report_counts_every_read_idea():
    out = report(reads(), target=0.05, resamples=100)
    assert out["ideas"] == out["judged"] == 90
    assert set(out["by_field"]) == {"a", "b", "c"}
    assert out["by_kind"]["paraphrase"]["source_realised"]["n"] == 18


def test_a_fit_is_written_through_the_registrys_writer_and_a_flat_file_is_carried_over(tmp_path):
    rule = fit_rule(reads(), target=0.05, version="verifier-fit-test")
    path = tmp_path / "verifier-fits.json"
    path.write_text(json.dumps({fit_key("local:old:p1", "hybrid-1"): rule.as_dict()}))  # the earlier flat layout
    write_fit(path, "local:abc:p1", "hybrid-1", {**rule.as_dict(), "ideas": 36})
    data = json.loads(path.read_text())
    assert set(data) == {"fits"} and set(data["fits"]) == {"local:old:p1|hybrid-1", "local:abc:p1|hybrid-1"}
    assert "written" in data["fits"]["local:abc:p1|hybrid-1"] and not list(tmp_path.glob(".*.tmp"))
    assert rule_for("local:old:p1", "hybrid-1", (path,)).as_dict() == rule.as_dict()
    assert rule_for("local:abc:p1", "hybrid-1", (path,)).as_dict() == rule.as_dict()
