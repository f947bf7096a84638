"""Storage of each scored idea's look-back side (migration 0011_prior_art): one `prior_art` row per score (the window,
the two classes) and its top K papers before the cutoff in `prior_art_matches`; both go with their score."""

from datetime import date, datetime

from sqlalchemy import JSON, Boolean, Date, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from indexing.models import Base, utcnow


class PriorArt(Base):
    """The look-back side of one score: the window [start, end] searched (after clipping to the index), the
    decisions' summary and the idea's class at realised and at direction level (`unknown` when the index held no
    paper before the cutoff)."""

    __tablename__ = "prior_art"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    score_id: Mapped[int] = mapped_column(ForeignKey("scores.id", ondelete="CASCADE"), unique=True)
    lookback_days: Mapped[int] = mapped_column(Integer)
    requested_start: Mapped[date] = mapped_column(Date)  # cutoff - lookback_days
    start: Mapped[date | None] = mapped_column(Date)  # the window searched; None when nothing could be
    end: Mapped[date] = mapped_column(Date)  # the day before the cutoff
    clipped: Mapped[bool] = mapped_column(Boolean)  # the index starts after requested_start
    papers: Mapped[int] = mapped_column(Integer)  # papers in [start, end]
    status: Mapped[str] = mapped_column(String(16))  # known | unknown
    knowledge_cutoff: Mapped[date | None] = mapped_column(Date)  # the system's declaration when scored
    class_realised: Mapped[str] = mapped_column(String(20))
    class_direction: Mapped[str] = mapped_column(String(20))
    realised_before: Mapped[bool | None] = mapped_column(Boolean)  # None: unknown
    direction_before: Mapped[bool | None] = mapped_column(Boolean)
    n_realised: Mapped[int | None] = mapped_column(Integer)
    n_direction: Mapped[int | None] = mapped_column(Integer)
    # realised prior art published before the knowledge cutoff (the generator could have read it) / on or after it
    n_realised_before_knowledge: Mapped[int | None] = mapped_column(Integer)
    n_realised_after_knowledge: Mapped[int | None] = mapped_column(Integer)
    verifier: Mapped[str | None] = mapped_column(String(128))  # the verifier that read the look-back candidates
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    matches: Mapped[list["PriorArtMatch"]] = relationship(cascade="all, delete-orphan",
                                                          order_by="PriorArtMatch.rank")


class PriorArtMatch(Base):
    """One of an idea's top K papers before the cutoff, as the matcher decided it (a snapshot of the paper, as
    `matches` keeps one); `period` places it against the system's knowledge cutoff."""

    __tablename__ = "prior_art_matches"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    prior_art_id: Mapped[int] = mapped_column(ForeignKey("prior_art.id", ondelete="CASCADE"), index=True)
    rank: Mapped[int] = mapped_column(Integer)
    paper_id: Mapped[str] = mapped_column(String(255))
    title: Mapped[str] = mapped_column(Text)
    venue: Mapped[str | None] = mapped_column(String(255))
    year: Mapped[int] = mapped_column(Integer)
    publication_date: Mapped[date] = mapped_column(Date)
    citations: Mapped[int | None] = mapped_column(Integer)
    similarity: Mapped[float] = mapped_column(Float)
    realised: Mapped[bool] = mapped_column(Boolean)  # dense: cosine >= theta
    direction: Mapped[bool] = mapped_column(Boolean)  # dense: the same as realised
    # before_knowledge_cutoff | after_knowledge_cutoff; None when the system declares none
    period: Mapped[str | None] = mapped_column(String(24))
    p_realised: Mapped[float | None] = mapped_column(Float)
    p_direction: Mapped[float | None] = mapped_column(Float)
    p_method: Mapped[float | None] = mapped_column(Float)
    evidence_sentence: Mapped[str | None] = mapped_column(Text)
    problem_sentence: Mapped[str | None] = mapped_column(Text)
    shared_terms: Mapped[list | None] = mapped_column(JSON)
    verifier_p_direction: Mapped[float | None] = mapped_column(Float)
    verifier_p_realised: Mapped[float | None] = mapped_column(Float)
    verifier_source: Mapped[str | None] = mapped_column(String(16))
    embedding_realised: Mapped[bool | None] = mapped_column(Boolean)
    embedding_direction: Mapped[bool | None] = mapped_column(Boolean)
