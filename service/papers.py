"""One stored paper, as the API answers it."""

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.errors import NotFoundError
from indexing.models import Paper


class PaperOut(BaseModel):
    """A stored paper: its source's id, text, dates, venue, status and citation count."""

    paper_id: str
    source: str
    title: str
    abstract: str
    publication_date: str
    date_rule: str
    year: int
    venue: str | None
    status: str | None
    citation_count: int | None
    citations_at: str | None
    doi: str | None
    arxiv_id: str | None
    updated_at: str


def paper_named(session: Session, paper_id: str) -> Paper:
    """The paper by its source's own id; 404 when the store has none."""
    paper = session.scalars(select(Paper).where(Paper.paper_id == paper_id)).first()
    if paper is None:
        raise NotFoundError(f"no paper with id {paper_id!r}")
    return paper


def paper_out(p: Paper) -> PaperOut:
    return PaperOut(paper_id=p.paper_id, source=p.source, title=p.title, abstract=p.abstract,
                    publication_date=p.publication_date.isoformat(), date_rule=p.date_rule, year=p.year,
                    venue=p.venue, status=p.status, citation_count=p.citation_count,
                    citations_at=p.citations_at.isoformat() if p.citations_at else None, doi=p.doi,
                    arxiv_id=p.arxiv_id, updated_at=p.updated_at.isoformat())
