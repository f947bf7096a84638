"""GET /v1/analysis/ideas/{idea_pk}: the drill-down's answer, field for field as analyses.ideas builds it."""

from typing import Any

from service.schemas import Answer, Number, PriorArtOut, VerdictOut


class StoredScoreOut(Answer):
    """A stored score's context and decisions."""

    score: Number
    matched: bool
    model: str
    theta: Number
    index_version: str
    cutoff: str
    window_end: str
    top_k: int
    matcher: str
    matcher_version: str | None
    thresholds: dict[str, Any]
    direction_score: Number | None
    n_matches: int | None
    n_direction_matches: int | None
    shape: str | None
    warnings: list[str] | None
    verifier: str | None = None
    verifier_top_k: int | None = None
    embedding_score: Number | None = None
    embedding_n_matches: int | None = None


class IdeaMatchOut(Answer):
    """One retrieved paper of the idea, as stored."""

    rank: int
    paper_id: str
    title: str
    venue: str | None
    year: int
    citations: int | None
    similarity: Number
    impact: Number
    above_threshold: bool
    p_realised: Number | None
    p_direction: Number | None
    p_method: Number | None
    realised: bool | None
    direction: bool | None
    evidence_sentence: str | None
    problem_sentence: str | None
    shared_terms: list[str] | None
    verifier: VerdictOut | None = None
    embedding_realised: bool | None = None
    embedding_direction: bool | None = None
    publication_date: str | None


class IdeaJudgeScores(Answer):
    judge: str
    novelty: Number | None = None
    feasibility: Number | None = None
    impact: Number | None = None
    overall: Number | None = None
    interestingness: Number | None = None
    novel: Number | None = None


class IdeaDetailOut(Answer):
    """GET /v1/analysis/ideas/{idea_pk}: the idea, its score, every retrieved paper, prior art, judge scores."""

    idea_pk: int
    idea_id: str
    system: str
    run: str
    run_id: int
    problem: str | None
    method: str | None
    text: str | None
    origin: dict[str, Any] | None
    score: StoredScoreOut | None
    matches: list[IdeaMatchOut]
    prior_art: PriorArtOut | None
    lookback_window: dict[str, Any] | None
    knowledge_cutoff: str | None
    judges: list[IdeaJudgeScores]
