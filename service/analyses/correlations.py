"""Spearman correlation between the HindSight score and each judge dimension, overall and per group."""

from sqlalchemy.orm import Session

from service.analyses.prior_art import prior_art_correlations
from service.analyses.selection import Selection, load_ideas, load_judge_scores, window_report
from service.analyses.stats import spearman_rows
from service.judge_scores import DIMENSIONS


def correlations(session: Session, *, selection: Selection, judge: str | None = None) -> dict:
    """One row per (scope, judge, dimension); scope is "all" or a group."""
    ideas = load_ideas(session, selection)
    judges = load_judge_scores(session, ideas["idea_pk"])
    if judge is not None:
        judges = judges[judges["judge"] == judge]
    joined = ideas.merge(judges, on="idea_pk")
    rows = spearman_rows(joined, "score", DIMENSIONS)
    return {"selection": selection.as_dict(), "method": "spearman", "interval": "fisher_z_bonett_wright_95",
            "x": "hindsight score", "ideas": int(len(ideas)), **window_report(ideas, selection), "rows": rows,
            "prior_art": prior_art_correlations(session, ideas, judges)}
