"""Storage of draws and labels (migration 0009_labels)."""

from datetime import datetime

from sqlalchemy import DateTime, Float, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from indexing.models import Base, utcnow

LABELS = ("realised", "direction", "none")


class Draw(Base):
    """A uniform random sample, without replacement, of one run's scored ideas not drawn before (one stratum)."""

    __tablename__ = "label_draws"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    seed: Mapped[int] = mapped_column(Integer)
    population: Mapped[int] = mapped_column(Integer)  # the run's scored ideas when drawn
    available: Mapped[int] = mapped_column(Integer)  # of them, not in an earlier draw
    n: Mapped[int] = mapped_column(Integer)
    inclusion_probability: Mapped[float] = mapped_column(Float)  # n / available
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DrawIdea(Base):
    """An idea of a draw, at its position in the draw's random order (the order the labelling view serves)."""

    __tablename__ = "label_draw_ideas"
    __table_args__ = (UniqueConstraint("idea_pk", name="uq_label_draw_ideas_idea_pk"),)

    draw_id: Mapped[int] = mapped_column(ForeignKey("label_draws.id", ondelete="CASCADE"), primary_key=True)
    idea_pk: Mapped[int] = mapped_column(ForeignKey("ideas.pk", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)


class Label(Base):
    """One annotator's decision on one (idea, paper) pair: realised, direction or none."""

    __tablename__ = "labels"
    __table_args__ = (UniqueConstraint("idea_pk", "paper_id", "annotator", name="uq_labels_idea_paper_annotator"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    idea_pk: Mapped[int] = mapped_column(ForeignKey("ideas.pk", ondelete="CASCADE"), index=True)
    paper_id: Mapped[str] = mapped_column(String(255))
    annotator: Mapped[str] = mapped_column(String(128))
    label: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)
