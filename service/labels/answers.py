"""The labels' JSON answers (/v1/labels/*), field for field as draws, the store and the estimates build them."""

from pydantic import Field

from service.analyses.answers import SelectionOut
from service.rejections import RowErrorOut
from service.schemas import Answer, Number, WarningOut


class DrawOut(Answer):
    """A draw: its stratum (one system's run), sizes, seed and the labelled ideas per annotator."""

    draw: int
    run_id: int
    system: str
    run: str
    seed: int
    population: int
    available: int
    n: int
    inclusion_probability: Number
    created: str
    labelled: dict[str, int] = Field(description="Drawn ideas labelled, per annotator.")
    ideas: list[str] | None = Field(None, description="A new draw: its ideas' ids in draw order.")


class DrawsOut(Answer):
    """POST /v1/labels/draws: one draw per system's run."""

    run: str
    seed: int
    draws: list[DrawOut]


class OutsideDraws(Answer):
    ideas: int
    labels: int


class Stratum(Answer):
    run_id: int
    system: str
    run: str
    scored: int
    drawn: int
    draws: list[DrawOut]
    outside_draws: dict[str, OutsideDraws] = Field(description="Per annotator, labels of ideas in no draw.")


class LabelStatusOut(Answer):
    """GET /v1/labels/status."""

    run: str
    strata: list[Stratum]


class Candidate(Answer):
    """A paper shown beside the idea to label, with the matcher's reading and its evidence."""

    rank: int
    paper_id: str
    title: str
    abstract: str
    venue: str | None
    year: int
    publication_date: str | None = None
    similarity: Number
    p_realised: Number | None
    p_direction: Number | None
    realised: bool
    direction: bool
    period: str | None = None
    evidence_sentence: str | None
    problem_sentence: str | None
    shared_terms: list[str]
    side: str | None = None


class ItemIdea(Answer):
    position: int
    idea_pk: int
    idea_id: str
    title: str | None
    problem: str | None
    method: str | None
    text: str | None
    labelled: bool
    candidates: list[Candidate]
    lookback_candidates: list[Candidate]
    cutoff: str | None
    labels: dict[str, str] = Field(description="The annotator's labels of this idea, per paper id.")


class Progress(Answer):
    labelled: int
    drawn: int


class LabelItemOut(Answer):
    """GET /v1/labels/draws/{id}/item: one drawn idea to label (null when the annotator labelled them all)."""

    draw: DrawOut
    annotator: str
    progress: Progress
    top_k: int
    idea: ItemIdea | None


class LabelOut(Answer):
    """POST /v1/labels: the label as written."""

    idea_pk: int
    idea_id: str
    paper_id: str
    annotator: str
    label: str
    time: str


class LabelImportOut(Answer):
    """POST /v1/labels/import: what the file held and what was written."""

    file: str
    format: str
    rows: int
    blank: int
    labels: int
    inserted: int
    updated: int
    unchanged: int
    written: bool
    annotators: list[str]
    ideas: int
    ideas_outside_draws: int
    errors: list[RowErrorOut]


class Estimate(Answer):
    """A mean with its interval: labels alone (lambda 0) or prediction-powered (PPI++)."""

    value: Number | None
    ci: list[Number] | None
    se: Number | None
    lambda_: Number | None = Field(alias="lambda")
    method: str
    interval: str
    ci_center: Number | None


class SmallSampleCheck(Answer):
    small: bool
    positives: int
    negatives: int
    predictor_misses: int | None = None


class SmallSample(Answer):
    small: bool
    strata: list[SmallSampleCheck]


class MetricEstimate(Answer):
    """One metric of a group: the matcher's figure, the labels alone and prediction-powered."""

    matcher: Number | None
    labels_only: Estimate | None
    ppi: Estimate | None
    n_labelled: int
    n_unlabelled: int | None = None
    lambda_: list[Number | None] | None = Field(None, alias="lambda")
    small_sample: SmallSample | None = None
    predictor_r2: Number | None = None
    labels_to_halve: int | None = None
    predictor: str | None = None


class ClassEstimates(Answer):
    """The prior-art classes' rates: per level (realised, direction), per class."""

    known: int
    unknown: int
    not_scored_with_prior_art: int
    predictor: str
    realised: dict[str, MetricEstimate]
    direction: dict[str, MetricEstimate]


class EstimateGroup(Answer):
    group: str
    system: str
    run_ids: list[int]
    ideas: int
    drawn: int
    labelled_outside_draws: int
    drawn_unlabelled: int
    realised_rate: MetricEstimate
    direction_rate: MetricEstimate
    mean_score: MetricEstimate
    classes: ClassEstimates


class Difference(Answer):
    matcher: Number | None
    labels_only: Estimate
    ppi: Estimate


class EstimateDifference(Answer):
    a: str
    b: str
    realised_rate: Difference
    direction_rate: Difference
    mean_score: Difference
    classes: dict[str, dict[str, Difference | None]]


class Confusion(Answer):
    n: int
    tp: int
    fp: int
    fn: int
    tn: int
    precision: Number | None
    recall: Number | None


class Calls(Answer):
    """One caller's decisions (the matcher's, or the verifier's) against the labels, per pair and per idea."""

    ideas: int
    pair: dict[str, Confusion]
    idea: dict[str, Confusion]
    unlabelled_calls: dict[str, int]


class Measured(Answer):
    ideas: int
    shown: int
    matcher: Calls | None
    verifier: Calls | None


class Kappa(Answer):
    n: int
    agree: int
    kappa: Number | None


class AnnotatorPair(Answer):
    a: str
    b: str
    ideas: int
    pair: Kappa
    idea: dict[str, Kappa]


class Agreement(Answer):
    """The matcher (and verifier) measured on the labels: overall, per group, per annotator, the look-back side."""

    annotator: str | None
    overall: Measured
    groups: dict[str, Measured]
    annotators: list[AnnotatorPair]
    lookback: Measured


class PredictorOut(Answer):
    name: str
    text: str
    chosen: str


class EstimatesOut(Answer):
    """GET /v1/labels/estimates (`hindsight analyze systems --labels`)."""

    selection: SelectionOut
    confidence: Number
    annotator: str | None
    annotator_rule: str
    annotators: list[str]
    predictor: PredictorOut
    groups: list[EstimateGroup]
    differences: list[EstimateDifference]
    agreement: Agreement
    warnings: list[WarningOut]
