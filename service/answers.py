"""The JSON answers of the service's own modules (health, index, jobs, corpus, runs, systems, judge scores, papers),
field for field as those modules build them."""

from typing import Any

from pydantic import Field

from service.rejections import RowErrorOut
from service.schemas import Answer, MatchOut, Number, PriorArtOut


class HealthOut(Answer):
    status: str


class ReadyOut(Answer):
    """GET /readyz when ready (or degraded: serving while the pointer names a refused version): the versions and the
    served index as its backend describes it."""

    status: str
    loaded_version: str | None
    current_pointer: str | None
    warning: str | None
    refused: dict[str, str] = Field(description="Refused versions and why.")
    index: dict[str, Any] | None = Field(description="The backend's description (Qdrant: collection, alias).")
    unavailable: str | None
    backend_check: dict[str, Any] | None


class BuildOut(Answer):
    id: int
    version: str | None
    status: str
    model: str | None
    started: str
    error: str | None


class IndexStatusOut(Answer):
    """GET /v1/index: the current manifest, what is served, the latest builds."""

    manifest: dict[str, Any] | None = Field(description="The current version's manifest.json.")
    not_ready_reason: str | None
    loaded_version: str | None
    current_pointer: str | None
    warning: str | None
    refused: dict[str, str]
    index: dict[str, Any] | None
    unavailable: str | None
    backend_check: dict[str, Any] | None
    recent_builds: list[BuildOut]


class JobProgress(Answer):
    stage: str | None
    done: int
    total: int


class JobOut(Answer):
    """A background job: its status, progress and, once finished, its result or error."""

    id: str
    kind: str
    status: str
    created: str
    finished: str | None
    progress: JobProgress
    result: dict[str, Any] | None = Field(description="The job's report (a build's version and counts, a walk's "
                                                      "records, a verification's or judgement's counts).")
    error: str | None


class MonthCount(Answer):
    month: str
    papers: int


class VenueCount(Answer):
    venue: str
    papers: int


class OtherVenues(Answer):
    venues: int
    papers: int


class Citations(Answer):
    known: int
    missing: int
    share_known: Number | None


class CorpusOut(Answer):
    """GET /v1/corpus: papers per month in the current version's window, its venues, known citation counts."""

    index_version: str
    model: str
    window: dict[str, str]
    papers: int
    per_month: list[MonthCount]
    venues: list[VenueCount]
    other_venues: OtherVenues
    citations: Citations
    top_venue_papers: int


class RunOut(Answer):
    id: int
    system: str
    label: str
    created: str
    ideas: int
    mean_score: Number | None
    match_rate: Number | None


class StoredIdeaScore(Answer):
    """One stored idea as POST /v1/score answered it, with its score's context."""

    id: str
    problem: str | None
    method: str | None
    text: str | None
    origin: dict[str, Any] | None
    score: Number
    matched: bool
    model: str
    theta: Number
    index_version: str
    cutoff: str
    window: dict[str, str]
    top_k: int
    leak_risk: bool
    citation_normalisation: str | None
    scored_at: str
    matcher: str
    matcher_version: str | None
    thresholds: dict[str, Any]
    n_matches: int | None
    direction_score: Number | None
    n_direction_matches: int | None
    shape: str | None
    warnings: list[str] | None
    verifier: str | None
    verifier_top_k: int | None
    embedding_score: Number | None
    embedding_n_matches: int | None
    matches: list[MatchOut]
    prior_art: PriorArtOut | None
    lookback_window: dict[str, Any] | None


class RunScoresOut(Answer):
    """GET /v1/runs/{run}/scores."""

    run_id: int
    system: str
    run: str
    scores: list[StoredIdeaScore]


class RunIdeaRow(Answer):
    """One idea of a run as a flat row: origin, decisions, best match, the score's matcher and window."""

    idea_pk: int
    idea_id: str
    run_id: int
    system: str
    run: str
    generator: str | None
    topic: str | None
    title: str | None
    file: str | None
    scored: bool
    score: Number | None
    matched: bool | None
    n_matches: int | None
    direction_score: Number | None
    n_direction_matches: int | None
    direction: bool | None
    best_kind: str | None
    best_paper_id: str | None
    best_title: str | None
    best_venue: str | None
    best_similarity: Number | None
    best_p_realised: Number | None
    best_p_direction: Number | None
    best_p_method: Number | None
    best_impact: Number | None
    shape: str | None
    warnings: list[str] | None
    best_verifier_p_direction: Number | None
    best_verifier_p_realised: Number | None
    verifier: str | None
    verifier_top_k: int | None
    embedding_score: Number | None
    embedding_n_matches: int | None
    matcher: str | None
    matcher_version: str | None
    thresholds: dict[str, Any] | None
    model: str | None
    index_version: str | None
    cutoff: str | None
    window_end: str | None
    prior_art_class_realised: str | None
    prior_art_class_direction: str | None


class RunIdeasOut(Answer):
    """GET /v1/runs/{run}/ideas."""

    run_id: int
    system: str
    run: str
    ideas: list[RunIdeaRow]


class SystemOut(Answer):
    """A declared generator: its knowledge cutoff and model."""

    name: str
    knowledge_cutoff: str
    model: str | None
    updated_at: str | None


class JudgeOut(Answer):
    judge: str
    ideas: int
    dimensions: dict[str, int] = Field(description="Ideas scored per dimension.")


class JudgeImportOut(Answer):
    """POST /v1/judge-scores: what the file held and what was written."""

    file: str
    format: str
    rows: int
    inserted: int
    updated: int
    unchanged: int
    written: bool
    judges: list[str]
    dimensions: list[str]
    ignored_fields: list[str]
    errors: list[RowErrorOut]


class IngestRowError(Answer):
    file: str
    line: int
    field: str
    message: str
    record: int | None
    column: int | None
    text: str


class IngestOut(Answer):
    """POST /v1/papers: what the file held and what was written."""

    file: str
    format: str
    read: int
    inserted: int
    updated: int
    unchanged: int
    duplicates: int
    rejected: int
    written: bool
    errors: list[IngestRowError]
