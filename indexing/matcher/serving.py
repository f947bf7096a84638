"""The matcher as scoring uses it: one entry point for the service (what is searched, an idea's texts and vectors,
the decision), so that the service never assembles the matcher from its submodules."""

from indexing.matcher.corpus import CorpusView, MatcherUnavailable, matcher_of, matcher_version_of, view_of
from indexing.matcher.decide import Decision, FacetVectors, decide, embed
from indexing.matcher.facets import IdeaFacets, facets_of
from indexing.matcher.ranges import DIRECTION_ONLY, token_counts

__all__ = ["DIRECTION_ONLY", "CorpusView", "Decision", "FacetVectors", "IdeaFacets", "MatcherUnavailable", "decide",
           "embed", "facets_of", "matcher_of", "matcher_version_of", "token_counts", "view_of"]
