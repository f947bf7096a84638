"""The match decision, both rules: `dense` (the paper's rule, cosine >= theta) and `hybrid` (dense + BM25
candidates, calibrated `realised` and `direction` probabilities).

serving.py (the one entry point the service scores through), facets.py (an idea's texts), corpus.py (what is
searched), features.py (candidates and their features), decide.py (the decision, used by serving, fitting and
evaluation), evidence.py, model.py (fitted models and their registry); fitting: labelled.py, calibrate.py,
fitting.py, report.py, evaluate.py."""

from indexing.matcher.model import MATCHERS, HybridMatcher, find_entry

# the matcher a build uses when none is asked for: SPECTER2 keeps the paper's rule for replication
DEFAULT_MATCHER = {"minilm": "hybrid", "specter2": "dense"}


def default_matcher(model: str) -> str:
    return DEFAULT_MATCHER.get(model, "dense")


__all__ = ["DEFAULT_MATCHER", "MATCHERS", "HybridMatcher", "default_matcher", "find_entry"]
