"""Request and response models of the scoring API."""

import copy
import re
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from indexing.windows import iso_day


def _valid_unicode(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a JSON "\ud800" escape: it cannot be embedded or stored
        raise ValueError("contains invalid Unicode (an unpaired surrogate escape)") from None
    return value


Text = Annotated[str, AfterValidator(_valid_unicode)]


def _iso_date(value: Any) -> date:
    """A date is a "YYYY-MM-DD" string (the schema's format: date), never a number: {"until": 0} is refused."""
    if not isinstance(value, str):
        raise ValueError("must be a date written YYYY-MM-DD")
    return iso_day(value)


IsoDate = Annotated[date, BeforeValidator(_iso_date)]  # for request bodies; pydantic's lax date takes 0 as 1970

# a JSON number as it was computed: an int stays an int (a float field would write 1 as 1.0)
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]


def _no_open_object(schema: dict[str, Any]) -> None:
    schema.pop("additionalProperties", None)


class Answer(BaseModel):
    """A JSON answer's model: it mirrors the dict the library returns, field for field and in its order. Routes
    answer it with response_model_exclude_unset, so a key the dict leaves out stays out; a key it does not declare
    is kept (extra="allow"), never dropped, and tests/test_answers.py holds the dev set to none."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, json_schema_extra=_no_open_object)


class WarningOut(Answer):
    """A warning an answer carries: a code to test and a message to read."""

    code: str
    message: str


def json_answer(model: Any, *, dumps: bool = False) -> dict[str, Any]:
    """A JSON route's response arguments: its model and the keys the library gave (exclude_unset). dumps: the route
    writes its answer with json.dumps (JSONResponse), as it did while it also answered a file or a 503 itself;
    the others keep pydantic's encoder (which writes 1e-05 as 0.00001)."""
    from fastapi.responses import JSONResponse  # the routers' concern: the CLI imports these models without FastAPI

    return {"response_model": model, "response_model_exclude_unset": True,
            **({"response_class": JSONResponse} if dumps else {})}

# A real Gregorian day written YYYY-MM-DD (years 0001-9999), as a pattern: for parameters that hold several dates
# (a comma-separated list), where "format: date" cannot be said of each part.
_YEAR = r"(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_MONTH_DAY = r"((0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])|(0[13-9]|1[0-2])-(29|30)|(0[13578]|1[02])-31)"
_LEAP_YEAR = r"([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
DAY_PATTERN = rf"({_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"


def date_list_pattern(most: int) -> str:
    """1 to `most` comma-separated days (spaces around each allowed)."""
    return rf"^ *{DAY_PATTERN} *(, *{DAY_PATTERN} *){{0,{most - 1}}}$"


def _filled(value: str | None) -> bool:
    return value is not None and re.search(r"\S", value) is not None


_SOME_TEXT: dict[str, Any] = {"type": "string", "pattern": r"\S"}
# the rule below, said in the schema, so a client generated from it builds only ideas the server accepts
# each shape carries every property (a generator such as openapi-python-client builds one class per shape from its
# own properties alone: with only the ones the rule names, its ideas had no id)
_TEXT_OR_PROBLEM_METHOD: list[dict[str, Any]] = [
    {"required": ["text"], "properties": {"text": _SOME_TEXT, "problem": {"type": "null"}, "method": {"type": "null"}}},
    {"required": ["problem"], "properties": {"problem": _SOME_TEXT, "text": {"type": "null"}}},
    {"required": ["method"], "properties": {"method": _SOME_TEXT, "text": {"type": "null"}}},
]


class Origin(BaseModel):
    """Where an idea was read from: the file, the generator's layout, its topic (the folder holding the file, or the
    record's own) and the generator's title of it."""

    file: Text | None = Field(None, max_length=4096)
    generator: Text | None = Field(None, max_length=64)
    topic: Text | None = Field(None, max_length=1000)
    title: Text | None = Field(None, max_length=4000)


def _idea_shapes(schema: dict[str, Any]) -> None:
    schema["anyOf"] = [{"required": [*schema["required"], *shape["required"]],
                        "properties": {**copy.deepcopy(schema["properties"]), **shape["properties"]}}
                       for shape in _TEXT_OR_PROBLEM_METHOD]


class IdeaIn(BaseModel):
    """An idea: 'text', or 'problem' and/or 'method' (at least one with a non-blank character)."""

    model_config = ConfigDict(json_schema_extra=_idea_shapes)
    id: Text = Field(min_length=1, max_length=255, description="The caller's idea id.")
    problem: Text | None = None
    method: Text | None = None
    text: Text | None = Field(None, description="Free text, instead of problem + method.")
    origin: Origin | None = Field(None, description="Where the idea was read from; stored with it.")

    @model_validator(mode="after")
    def _has_text(self) -> "IdeaIn":
        if self.text is not None and (self.problem is not None or self.method is not None):
            raise ValueError("give either 'text' or 'problem' + 'method', not both")
        if not (_filled(self.text) or _filled(self.problem) or _filled(self.method)):
            raise ValueError("an idea needs 'problem' (and 'method') or 'text'")
        return self


class ScoreOptions(BaseModel):
    """What POST /v1/score takes beside the ideas, as a JSON body and as an upload's form fields alike."""

    system: Text = Field("default", min_length=1, max_length=255, description="The idea generator.")
    run: Text = Field("default", min_length=1, max_length=255, description="A label for this run of it.")
    top_k: int | None = Field(None, ge=1, le=200)
    # format "date" in the schema; the value is checked against the version's window, which answers with its range
    cutoff: str | None = Field(None, max_length=64, json_schema_extra={"format": "date"},
                               description="Window start, YYYY-MM-DD, inside the built window; "
                                                                "default: the system's declared knowledge cutoff, "
                                                                "else the built cutoff.")
    until: str | None = Field(None, max_length=64, json_schema_extra={"format": "date"},
                              description="Window end, YYYY-MM-DD; default: the built end.")
    matcher: Literal["dense", "hybrid"] | None = Field(
        None, description="Match decision: dense (cosine >= theta, the paper's rule) or hybrid (calibrated "
                          "realised/direction probabilities); default: the index version's.")
    prior_art: bool | None = Field(None, description="Also search each idea's top K papers in the look-back window "
                                                     "[cutoff - lookback_days, cutoff) and give its prior-art class "
                                                     "(docs/prior-art.md); false turns it off. Default "
                                                     "HINDSIGHT_PRIOR_ART (true).")
    lookback_days: int | None = Field(None, ge=1, le=36_500, description="Days before the cutoff the look-back "
                                                                         "window reaches; default "
                                                                         "HINDSIGHT_PRIOR_ART_LOOKBACK_DAYS (730).")


class ScoreRequest(ScoreOptions):
    """POST /v1/score as JSON: the ideas and the options."""

    ideas: list[IdeaIn] = Field(min_length=1)


class EvidenceOut(BaseModel):
    sentence: str | None = Field(description="The abstract sentence closest to the idea's method (lexically).")
    problem_sentence: str | None = Field(None, description="The abstract sentence closest to the idea's problem.")
    shared_terms: list[str] = Field(description="Words of the idea's method the paper also uses.")


class MatchOut(BaseModel):
    paper_id: str
    title: str
    venue: str | None
    year: int
    citations: int | None
    similarity: float
    impact: float
    above_threshold: bool = Field(description="Counts as a match under the answer's matcher (hybrid: realised).")
    # hybrid matcher only
    p_realised: float | None = None
    p_direction: float | None = None
    p_method: float | None = Field(None, description="Same method (problem_and_method rule: p_realised = "
                                                     "p_direction * p_method).")
    realised: bool | None = None
    direction: bool | None = None
    evidence: EvidenceOut | None = None
    verifier: "VerdictOut | None" = Field(None, description="The verifier's reading of the pair; null when no "
                                                            "verifier read it (none asked, or past its top K).")
    embedding_realised: bool | None = Field(None, description="With a verifier: what the embedding features alone "
                                                              "decided (above_threshold is the verified decision).")
    embedding_direction: bool | None = None


class VerdictOut(BaseModel):
    p_direction: float = Field(description="P(Yes) of 'same concrete problem?', renormalised over Yes and No.")
    p_realised: float = Field(description="P(Yes) of 'same problem AND the idea's method as the core mechanism?'.")
    source: str = Field(description="logprobs (token probabilities) or parsed (a Yes/No read off the text).")


PriorArtClass = Literal["anticipated", "recalled", "already_published", "unrealised", "unknown"]


class PriorArtMatchOut(BaseModel):
    """One of the idea's top K papers in the look-back window, decided by the same matcher as the forward side."""

    paper_id: str
    title: str
    venue: str | None
    year: int
    publication_date: str
    citations: int | None
    similarity: float
    realised: bool = Field(description="Realised before the cutoff (dense: cosine >= theta).")
    direction: bool = Field(description="Same problem (dense: the same as realised).")
    period: Literal["before_knowledge_cutoff", "after_knowledge_cutoff"] | None = Field(
        None, description="Against the system's declared knowledge cutoff: before it the generator could have read "
                          "the paper; after it, it was published between the knowledge and the scoring cutoff. "
                          "null: no knowledge cutoff declared.")
    p_realised: float | None = None
    p_direction: float | None = None
    p_method: float | None = None
    evidence: EvidenceOut | None = None
    verifier: "VerdictOut | None" = None
    embedding_realised: bool | None = None
    embedding_direction: bool | None = None


class PriorArtOut(BaseModel):
    """The idea on both sides of the cutoff: its class at realised and at direction level and its papers before."""

    class_realised: PriorArtClass = Field(description="anticipated (realised after, not before), recalled (both), "
                                                      "already_published (before, not after), unrealised (neither), "
                                                      "unknown (the index holds nothing before the cutoff).")
    class_direction: PriorArtClass = Field(description="The same four classes from direction matches.")
    realised_before: bool | None = Field(description="A realised match in the look-back window; null: unknown.")
    direction_before: bool | None = None
    n_realised: int | None = None
    n_direction: int | None = None
    n_realised_before_knowledge: int | None = Field(None, description="Realised prior art published before the "
                                                                      "declared knowledge cutoff.")
    n_realised_after_knowledge: int | None = Field(None, description="Realised prior art published between the "
                                                                     "knowledge cutoff and the scoring cutoff.")
    matches: list[PriorArtMatchOut] = Field(default_factory=list)


class IdeaScoreOut(BaseModel):
    id: str
    score: float = Field(description="Max impact over the matches (hybrid: realised matches); 0 when none.")
    matched: bool
    n_matches: int
    matches: list[MatchOut]
    # hybrid matcher only
    direction_score: float | None = Field(None, description="Max impact over direction matches.")
    n_direction_matches: int | None = None
    embedding_score: float | None = Field(None, description="With a verifier: the score the embedding features "
                                                            "alone gave.")
    embedding_n_matches: int | None = None
    shape: str | None = Field(None, description="facets (problem + method) or text (whole-text model).")
    origin: Origin | None = None
    warnings: list[str] = Field(default_factory=list, description="Where the idea is outside what the matcher was "
                                                                  "made for (docs/matching.md), and what follows.")
    prior_art: PriorArtOut | None = Field(None, description="The look-back side and the idea's class; null when "
                                                            "prior art was turned off.")


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
    built_window: dict[str, str] | None = None  # the index's range; cutoff and window above are the effective ones
    cutoff_source: str = "index"  # request, system (its declared knowledge cutoff) or index
    knowledge_cutoff: str | None = None
    leak_risk: bool = False
    warnings: list[dict] = []
    matcher: str = "dense"
    matcher_version: str | None = None
    thresholds: dict = Field(default_factory=dict, description="dense: theta; hybrid: probability thresholds per "
                                                                 "decision and idea shape.")
    verifier: str | None = Field(None, description="The verifier that decided the top candidates (revision: "
                                                   "model + prompt version); null: the embedding features alone.")
    verifier_top_k: int | None = None
    verifier_thresholds: dict | None = None
    lookback_window: dict | None = Field(None, description="The prior-art window beside `window`: start (null when "
                                                           "the index holds nothing before the cutoff), end (the day "
                                                           "before the cutoff), requested_start, lookback_days, "
                                                           "clipped, papers, status (known | unknown), "
                                                           "knowledge_cutoff; null when prior art was turned off.")


class ScoreResponse(ScoringContext):
    system: str
    run: str
    run_id: int
    ideas: list[IdeaScoreOut]
    read: dict | None = Field(None, description="A file upload: read = scored + refused, refusals by file, record "
                                                "and field, the layouts and field mappings read.")
    judge_scores: dict | None = Field(None, description="The generator's own ratings stored as judge scores.")


def idea_line(result: IdeaScoreOut, context: ScoringContext, **run: object) -> dict:
    """One idea's flat record (`hindsight score --out`): the idea's fields with the run's beside them; a run field
    whose name an idea field also has (warnings: the run's leak risks vs the idea's own) is written run_<name>."""
    idea = result.model_dump()
    shared = {**context.model_dump(), **run}
    return {**{(f"run_{k}" if k in idea else k): v for k, v in shared.items()}, **idea}
