"""The match decision: `dense` (the paper's rule, cosine >= theta) or `hybrid` (dense + BM25 candidates, calibrated
`realised` and `direction` probabilities). See features.py, model.py and calibrate.py."""

from indexing.matcher.model import MATCHERS, HybridMatcher, find_entry

# the matcher a build uses when none is asked for: SPECTER2 keeps the paper's rule for replication
DEFAULT_MATCHER = {"minilm": "hybrid", "specter2": "dense"}


def default_matcher(model: str) -> str:
    return DEFAULT_MATCHER.get(model, "dense")


__all__ = ["DEFAULT_MATCHER", "MATCHERS", "HybridMatcher", "default_matcher", "find_entry"]
