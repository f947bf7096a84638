"""The look-back side of a scoring request: each idea's top K papers in the look-back window, decided by the same
matcher (and verifier, when the request has one) as the forward side, on the same idea vectors, and its class."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from indexing.embedders import Embedder
from indexing.matcher.serving import CorpusView, Decision, FacetVectors, IdeaFacets, decide, view_of
from indexing.matcher.verifier.step import VerifierStep
from indexing.versions import LoadedIndex
from service.scoring.answer import decided_fields
from service.prior_art.classes import UNKNOWN, period_of, summary
from service.prior_art.window import LookBack, lookback_window
from service.schemas import IdeaScoreOut, PriorArtMatchOut, PriorArtOut, ScoringContext


@dataclass(frozen=True)
class PriorArtPlan:
    """A request's look-back window and the view its matcher searches (None: unknown, nothing to search)."""

    lookback: LookBack
    view: CorpusView | None
    evidence_top: int | None = None  # the look-back matches given evidence (None: all)

    def annotate(self, context: ScoringContext) -> ScoringContext:
        """The answer's context with the look-back window beside the forward one, and its warnings."""
        context.lookback_window = self.lookback.as_dict()
        context.warnings = [*context.warnings, *self.lookback.warnings]
        return context


def plan_prior_art(loaded: LoadedIndex, *, cutoff: date, days: int, matcher: str | None,
                   knowledge_cutoff: date | None = None, evidence_top: int | None = None) -> PriorArtPlan:
    """The look-back window [cutoff - days, cutoff) of a request and its view under the request's matcher;
    evidence_top: how many of an idea's look-back matches get the hybrid matcher's evidence sentences."""
    lookback = lookback_window(loaded, cutoff, days, knowledge_cutoff=knowledge_cutoff)
    view = view_of(loaded, lookback.window.range, matcher) if lookback.window is not None else None
    return PriorArtPlan(lookback, view, evidence_top)


def unknown_prior_art() -> PriorArtOut:
    return PriorArtOut(class_realised=UNKNOWN, class_direction=UNKNOWN, realised_before=None, direction_before=None)


def look_back(plan: PriorArtPlan, facets: Sequence[IdeaFacets], results: Sequence[IdeaScoreOut], *,
              embedder: Embedder, top_k: int, vectors: list[FacetVectors] | None = None,
              counts: Sequence[dict[str, int]] | None = None, verifier: VerifierStep | None = None) -> None:
    """Set each result's `prior_art` (in place) from its top_k papers in the look-back window (vectors and counts:
    the forward side's, so the ideas are encoded and tokenised once)."""
    if plan.view is None:
        for r in results:
            r.prior_art = unknown_prior_art()
        return
    decisions = decide(facets, view=plan.view, embedder=embedder, top_k=top_k, vectors=vectors, counts=counts,
                       with_evidence=True, evidence_top=plan.evidence_top, verifier=verifier)
    for r, d in zip(results, decisions):
        r.prior_art = prior_art_of(d, rows=plan.view.rows, forward=r, knowledge_cutoff=plan.lookback.knowledge_cutoff)


def prior_art_of(d: Decision, *, rows: list[dict], forward: IdeaScoreOut,
                 knowledge_cutoff: date | None) -> PriorArtOut:
    """One idea's look-back answer from the matcher's decision on the window's papers. The matches are built
    without validation (model_construct): every value is made here with its type, and this runs for K papers of
    every idea scored."""
    realised = [bool(x) for x in d.realised]
    direction = [bool(x) for x in d.direction] if d.direction is not None else realised
    known = knowledge_cutoff.isoformat() if knowledge_cutoff is not None else None
    matches: list[PriorArtMatchOut] = []
    for j, (pos, shared) in enumerate(zip(d.positions, decided_fields(d))):
        paper = rows[pos]
        published = str(paper["publication_date"])[:10]  # ISO dates compare as text
        matches.append(PriorArtMatchOut.model_construct(
            paper_id=paper["paper_id"], title=paper["title"], venue=paper["venue"], year=paper["year"],
            publication_date=published, citations=paper["citations"],
            realised=realised[j], direction=realised[j] or direction[j],
            period=period_of(published, known), **shared))
    return PriorArtOut.model_construct(**summary(matches, forward, knowledge_declared=known is not None),
                                       matches=matches)

