"""Request and response models of the scoring API."""

import re
from datetime import date
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator


def _valid_unicode(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a JSON "\ud800" escape: it cannot be embedded or stored
        raise ValueError("contains invalid Unicode (an unpaired surrogate escape)") from None
    return value


Text = Annotated[str, AfterValidator(_valid_unicode)]


def _iso_date(value):
    """A date is a "YYYY-MM-DD" string (the schema's format: date), never a number: {"until": 0} is refused."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        return date.fromisoformat(value)
    raise ValueError("must be a date written YYYY-MM-DD")


IsoDate = Annotated[date, BeforeValidator(_iso_date)]  # for request bodies; pydantic's lax date takes 0 as 1970


def _filled(value: str | None) -> bool:
    return value is not None and re.search(r"\S", value) is not None


_SOME_TEXT = {"type": "string", "pattern": r"\S"}
# the rule below, said in the schema, so a client generated from it builds only ideas the server accepts
_TEXT_OR_PROBLEM_METHOD = [
    {"required": ["text"], "properties": {"text": _SOME_TEXT, "problem": {"type": "null"}, "method": {"type": "null"}}},
    {"required": ["problem"], "properties": {"problem": _SOME_TEXT, "text": {"type": "null"}}},
    {"required": ["method"], "properties": {"method": _SOME_TEXT, "text": {"type": "null"}}},
]


class IdeaIn(BaseModel):
    """An idea: 'text', or 'problem' and/or 'method' (at least one with a non-blank character)."""

    model_config = ConfigDict(json_schema_extra={"anyOf": _TEXT_OR_PROBLEM_METHOD})
    id: Text = Field(min_length=1, max_length=255, description="The caller's idea id.")
    problem: Text | None = None
    method: Text | None = None
    text: Text | None = Field(None, description="Free text, instead of problem + method.")

    @model_validator(mode="after")
    def _has_text(self) -> "IdeaIn":
        if self.text is not None and (self.problem is not None or self.method is not None):
            raise ValueError("give either 'text' or 'problem' + 'method', not both")
        if not (_filled(self.text) or _filled(self.problem) or _filled(self.method)):
            raise ValueError("an idea needs 'problem' (and 'method') or 'text'")
        return self


class ScoreRequest(BaseModel):
    system: Text = Field("default", min_length=1, max_length=255, description="The idea generator.")
    run: Text = Field("default", min_length=1, max_length=255, description="A label for this run of it.")
    ideas: list[IdeaIn] = Field(min_length=1)
    top_k: int | None = Field(None, ge=1, le=200)


class MatchOut(BaseModel):
    paper_id: str
    title: str
    venue: str | None
    year: int
    citations: int | None
    similarity: float
    impact: float
    above_threshold: bool


class IdeaScoreOut(BaseModel):
    id: str
    score: float
    matched: bool
    n_matches: int
    matches: list[MatchOut]


class ScoringContext(BaseModel):
    """What makes a score reproducible."""

    model: str
    model_id: str
    revision: str
    theta: float
    index_version: str
    cutoff: str
    window: dict[str, str]
    top_k: int
    impact: dict


class ScoreResponse(ScoringContext):
    system: str
    run: str
    run_id: int
    ideas: list[IdeaScoreOut]
