"""Storage models: papers, embedding cache, index builds, runs, ideas, scores, matches."""

from datetime import date, datetime, timezone

from sqlalchemy import (
    JSON, Boolean, Date, DateTime, Float, ForeignKey, Integer, LargeBinary, String, Text, UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    pass


class Paper(Base):
    __tablename__ = "papers"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    paper_id: Mapped[str] = mapped_column(String(255), unique=True, index=True)  # the source's own id
    source: Mapped[str] = mapped_column(String(32))
    title: Mapped[str] = mapped_column(Text)
    abstract: Mapped[str] = mapped_column(Text, default="")
    publication_date: Mapped[date] = mapped_column(Date, index=True)
    date_rule: Mapped[str] = mapped_column(String(64))  # "exact" or how a year became a date
    year: Mapped[int] = mapped_column(Integer)
    venue: Mapped[str | None] = mapped_column(String(255))
    status: Mapped[str | None] = mapped_column(String(64))
    citation_count: Mapped[int | None] = mapped_column(Integer)
    citations_at: Mapped[date | None] = mapped_column(Date)  # the day citation_count was taken; None = unknown
    doi: Mapped[str | None] = mapped_column(String(255), unique=True)
    arxiv_id: Mapped[str | None] = mapped_column(String(64), unique=True)
    title_key: Mapped[str] = mapped_column(String(512), index=True)  # normalised title + year, for dedup
    content_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class FetchCheckpoint(Base):
    """Where an API walk stands: written in the same transaction as the page it follows."""

    __tablename__ = "fetch_checkpoints"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)  # hash of source + query
    source: Mapped[str] = mapped_column(String(32))
    query: Mapped[dict] = mapped_column(JSON)
    cursor: Mapped[str | None] = mapped_column(Text)  # the next page's cursor/token; None before the first page
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    state: Mapped[dict] = mapped_column(JSON)  # pages, records, ingest counts, total, recent errors
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class Embedding(Base):
    __tablename__ = "embeddings"

    model: Mapped[str] = mapped_column(String(128), primary_key=True)
    revision: Mapped[str] = mapped_column(String(128), primary_key=True)
    content_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    vector: Mapped[bytes] = mapped_column(LargeBinary)  # float32, L2-normalised
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class IndexBuild(Base):
    __tablename__ = "index_builds"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[str | None] = mapped_column(String(64), unique=True)
    status: Mapped[str] = mapped_column(String(16))  # running, published, failed
    model: Mapped[str] = mapped_column(String(128))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    error: Mapped[str | None] = mapped_column(Text)
    manifest: Mapped[dict | None] = mapped_column(JSON)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("system", "label"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    system: Mapped[str] = mapped_column(String(255))
    label: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    ideas: Mapped[list["Idea"]] = relationship(back_populates="run", cascade="all, delete-orphan")


class Idea(Base):
    __tablename__ = "ideas"
    __table_args__ = (UniqueConstraint("run_id", "idea_id"),)

    pk: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    idea_id: Mapped[str] = mapped_column(String(255))  # the caller's id
    problem: Mapped[str | None] = mapped_column(Text)
    method: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str | None] = mapped_column(Text)
    # where it was read from (migration 0006_idea_origin): file, generator layout, topic, the generator's title
    origin_file: Mapped[str | None] = mapped_column(Text)
    generator: Mapped[str | None] = mapped_column(String(64))
    topic: Mapped[str | None] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)

    run: Mapped[Run] = relationship(back_populates="ideas")
    score: Mapped["Score | None"] = relationship(back_populates="idea", cascade="all, delete-orphan", uselist=False)


class Score(Base):
    __tablename__ = "scores"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idea_pk: Mapped[int] = mapped_column(ForeignKey("ideas.pk", ondelete="CASCADE"), unique=True)
    score: Mapped[float] = mapped_column(Float)
    matched: Mapped[bool] = mapped_column(Boolean)
    model: Mapped[str] = mapped_column(String(128))
    theta: Mapped[float] = mapped_column(Float)
    index_version: Mapped[str] = mapped_column(String(64))
    cutoff: Mapped[date] = mapped_column(Date)
    window_end: Mapped[date] = mapped_column(Date)
    top_k: Mapped[int] = mapped_column(Integer)
    # the request's cutoff was earlier than the system's declared knowledge cutoff: the "future" may be known
    leak_risk: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    citation_normalisation: Mapped[str] = mapped_column(String(16), default="global", server_default="global")
    # the match decision (migration 0003_matcher); NULL on scores stored before it: those are dense
    matcher: Mapped[str | None] = mapped_column(String(32))
    matcher_version: Mapped[str | None] = mapped_column(String(64))
    thresholds: Mapped[dict | None] = mapped_column(JSON)
    n_matches: Mapped[int | None] = mapped_column(Integer)
    direction_score: Mapped[float | None] = mapped_column(Float)
    n_direction_matches: Mapped[int | None] = mapped_column(Integer)
    # migration 0007_stored_evidence; NULL on scores stored before it (not recorded, not "none")
    warnings: Mapped[list | None] = mapped_column(JSON)
    shape: Mapped[str | None] = mapped_column(String(16))
    # migration 0008_verifier: the verifier that decided (NULL: embedding-only) and the embedding-only score beside it
    verifier: Mapped[str | None] = mapped_column(String(128))
    verifier_top_k: Mapped[int | None] = mapped_column(Integer)
    embedding_score: Mapped[float | None] = mapped_column(Float)
    embedding_n_matches: Mapped[int | None] = mapped_column(Integer)
    scored_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    idea: Mapped[Idea] = relationship(back_populates="score")
    matches: Mapped[list["Match"]] = relationship(
        back_populates="score", cascade="all, delete-orphan", order_by="Match.rank"
    )


class Match(Base):
    __tablename__ = "matches"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    score_id: Mapped[int] = mapped_column(ForeignKey("scores.id", ondelete="CASCADE"), index=True)
    rank: Mapped[int] = mapped_column(Integer)
    paper_id: Mapped[str] = mapped_column(String(255))
    # a snapshot of the paper as the index version saw it, so a stored score stays explainable
    title: Mapped[str] = mapped_column(Text)
    venue: Mapped[str | None] = mapped_column(String(255))
    year: Mapped[int] = mapped_column(Integer)
    citations: Mapped[int | None] = mapped_column(Integer)
    similarity: Mapped[float] = mapped_column(Float)
    impact: Mapped[float] = mapped_column(Float)
    above_threshold: Mapped[bool] = mapped_column(Boolean)
    # hybrid matcher only (migration 0003_matcher)
    p_realised: Mapped[float | None] = mapped_column(Float)
    p_direction: Mapped[float | None] = mapped_column(Float)
    realised: Mapped[bool | None] = mapped_column(Boolean)
    direction: Mapped[bool | None] = mapped_column(Boolean)
    evidence_sentence: Mapped[str | None] = mapped_column(Text)
    shared_terms: Mapped[list | None] = mapped_column(JSON)
    p_method: Mapped[float | None] = mapped_column(Float)  # migration 0007_stored_evidence
    problem_sentence: Mapped[str | None] = mapped_column(Text)
    # migration 0008_verifier: the verifier's probabilities (NULL: not read) and the embedding-only decision
    verifier_p_direction: Mapped[float | None] = mapped_column(Float)
    verifier_p_realised: Mapped[float | None] = mapped_column(Float)
    verifier_source: Mapped[str | None] = mapped_column(String(16))
    embedding_realised: Mapped[bool | None] = mapped_column(Boolean)
    embedding_direction: Mapped[bool | None] = mapped_column(Boolean)

    score: Mapped[Score] = relationship(back_populates="matches")


class JudgeScore(Base):
    """An LLM judge's scores of one idea, on the judge's own numeric scale."""

    __tablename__ = "judge_scores"
    __table_args__ = (UniqueConstraint("idea_pk", "judge"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idea_pk: Mapped[int] = mapped_column(ForeignKey("ideas.pk", ondelete="CASCADE"), index=True)
    judge: Mapped[str] = mapped_column(String(128))
    novelty: Mapped[float | None] = mapped_column(Float)
    feasibility: Mapped[float | None] = mapped_column(Float)
    impact: Mapped[float | None] = mapped_column(Float)
    overall: Mapped[float | None] = mapped_column(Float)
    interestingness: Mapped[float | None] = mapped_column(Float)  # migration 0006_idea_origin
    novel: Mapped[float | None] = mapped_column(Float)
    imported_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)

    idea: Mapped[Idea] = relationship()


class System(Base):
    """An idea generator with its declared knowledge cutoff (e.g. its LLM's training cutoff)."""

    __tablename__ = "systems"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    knowledge_cutoff: Mapped[date] = mapped_column(Date)
    model: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class StoredVerdict(Base):
    """A verifier's reading of one (idea, paper) pair, keyed by verifier revision and the idea text's hash, so that
    re-scoring, cutoff sweeps and analyses never ask twice."""

    __tablename__ = "verdicts"

    revision: Mapped[str] = mapped_column(String(128), primary_key=True)
    idea_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    paper_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    p_direction: Mapped[float] = mapped_column(Float)
    p_realised: Mapped[float] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class JudgeRevision(Base):
    """An LLM judge made here (service.llm_judge): its stored name, under which its scores sit in judge_scores, and
    the revision the name stands for: backend, model and weights, prompt version and hash, decoding
    (migration 0010_judging)."""

    __tablename__ = "judge_revisions"

    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    revision: Mapped[str] = mapped_column(String(255), unique=True)
    backend: Mapped[str] = mapped_column(String(16))
    model: Mapped[str] = mapped_column(String(255))
    weights: Mapped[str] = mapped_column(String(255))
    prompt: Mapped[str] = mapped_column(String(64))
    prompt_sha: Mapped[str] = mapped_column(String(16))
    decoding: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class JudgeAnswer(Base):
    """One answer of a judge revision, keyed by (revision, task, text hash, question): a rating of an idea on a
    dimension, a decision on a paper, or a choice between two texts in the order shown (the hash of both). An
    answer that cannot be read is kept with its reason (label and value None), never dropped."""

    __tablename__ = "judge_answers"

    revision: Mapped[str] = mapped_column(String(255), primary_key=True)
    task: Mapped[str] = mapped_column(String(16), primary_key=True)
    text_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    question: Mapped[str] = mapped_column(String(32), primary_key=True)
    label: Mapped[str | None] = mapped_column(String(16))
    value: Mapped[float | None] = mapped_column(Float)  # the expected rating, or the parsed one
    probs: Mapped[dict | None] = mapped_column(JSON)  # label -> probability, where the backend gives them
    mass: Mapped[float | None] = mapped_column(Float)  # the labels' share of the answer's probability
    source: Mapped[str] = mapped_column(String(16))  # logprobs | parsed | sampled | invalid
    answer: Mapped[str | None] = mapped_column(Text)  # the text, when one was read
    reason: Mapped[str | None] = mapped_column(Text)  # why it is invalid
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
