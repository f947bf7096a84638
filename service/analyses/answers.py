"""The analyses' JSON answers (GET /v1/analysis/*), field for field as the analyses build them."""

from typing import Any

from pydantic import Field

from service.schemas import Answer, Number, WarningOut


class SelectionOut(Answer):
    """What the answer was computed over: runs and systems (empty: all), grouping, window and decision level."""

    runs: list[int]
    systems: list[str]
    group_by: str
    cutoff: str | None
    until: str | None
    pool_windows: bool
    level: str


class WindowCount(Answer):
    window: str
    ideas: int
    leak_risk_ideas: int


class LeakRisk(Answer):
    """Ideas scored at a cutoff earlier than their system's declared knowledge cutoff."""

    ideas: int
    systems: list[str]


class ScoringContextRow(Answer):
    """One (model, theta, index version, window, top K) the selected scores were made with, and how many."""

    model: str
    theta: Number
    index_version: str
    cutoff: str
    window_end: str
    top_k: int
    ideas: int


class Bootstrap(Answer):
    statistic: str
    method: str
    confidence_level: Number
    n_resamples: int
    seed: int


class JudgeMean(Answer):
    mean: Number | None
    n: int


class ClassRate(Answer):
    n: int
    rate: Number | None
    ci: list[Number] | None


class GroupPriorArt(Answer):
    """One group's prior-art block: its ideas' classes, rates per level and class, the anticipation score."""

    ideas: int
    scored_with_prior_art: int
    known: int
    unknown: int
    without_prior_art: int
    rates: dict[str, dict[str, ClassRate]] = Field(description="Per level (realised, direction), per class.")
    anticipation_score: Number | None
    anticipation_ci: list[Number] | None
    lookback_windows: list[str]
    clipped: int
    knowledge_cutoffs: list[str]
    readable_prior_art: int | None
    later_prior_art: int | None


class SystemGroup(Answer):
    """One group of `analyze systems`: the HindSight score, match rate and judge means."""

    group: str
    system: str
    runs: list[str]
    run_ids: list[int]
    ideas: int
    mean_score: Number | None
    ci: list[Number] | None
    median_score: Number | None
    matched: int
    match_rate: Number | None
    judges: dict[str, dict[str, JudgeMean]] = Field(description="Per judge, per dimension.")
    windows: list[str]
    leak_risk_ideas: int
    prior_art: GroupPriorArt | None = None


class EffectSize(Answer):
    name: str
    value: Number | None


class Comparison(Answer):
    """Two groups compared on one metric: Mann-Whitney U, Welch t, Cliff's delta (and a rate's difference)."""

    a: str
    b: str
    metric: str | None = None
    judge: str | None = None
    dimension: str | None = None
    level: str | None = None
    n_a: int
    n_b: int
    mean_a: Number | None
    mean_b: Number | None
    mannwhitney_u: Number | None
    mannwhitney_p: Number | None
    welch_t: Number | None
    welch_p: Number | None
    effect_size: EffectSize
    difference: Number | None = None
    difference_low: Number | None = None
    difference_high: Number | None = None


class PriorArtSummary(Answer):
    """The answer's prior-art block: the classes, the level, how rates and anticipation are computed."""

    classes: list[str]
    levels: list[str]
    level: str
    rate_interval: str
    anticipation: str
    unknown_ideas: int
    without_prior_art: int
    warnings: list[WarningOut] = []


class SystemsOut(Answer):
    """GET /v1/analysis/systems."""

    selection: SelectionOut
    bootstrap: Bootstrap
    scoring: list[ScoringContextRow]
    unscored_ideas: int
    windows: list[WindowCount]
    pooled_windows: bool
    leak_risk: LeakRisk
    warnings: list[WarningOut] = []
    judges: list[str]
    groups: list[SystemGroup]
    comparisons: list[Comparison]
    prior_art: PriorArtSummary | None


class CorrelationRow(Answer):
    scope: str
    judge: str
    dimension: str
    had_prior_art: int | None = None
    n: int
    rho: Number | None
    p: Number | None
    ci: list[Number] | None


class PriorArtCorrelations(Answer):
    x: str
    method: str
    ideas: int
    rate: Number | None
    rows: list[CorrelationRow]


class CorrelationsOut(Answer):
    """GET /v1/analysis/correlations."""

    selection: SelectionOut
    method: str
    interval: str
    x: str
    ideas: int
    windows: list[WindowCount]
    pooled_windows: bool
    leak_risk: LeakRisk
    warnings: list[WarningOut] = []
    rows: list[CorrelationRow]
    prior_art: PriorArtCorrelations | None


class Cut(Answer):
    kind: str
    value: Number | None
    rule: str


class Cuts(Answer):
    hindsight: Cut
    judge: Cut


class QuadrantShare(Answer):
    count: int
    share: Number | None


class QuadrantCount(Answer):
    group: str
    ideas: int
    judged: int
    unjudged: int
    true_positive: QuadrantShare
    hidden_gem: QuadrantShare
    overhyped: QuadrantShare
    true_negative: QuadrantShare


class BestMatch(Answer):
    paper_id: str | None = None
    title: str | None = None
    venue: str | None = None
    year: int | None = None
    similarity: Number | None = None
    impact: Number | None = None
    above_threshold: bool | None = None


class QuadrantIdea(Answer):
    idea_pk: int
    idea_id: str
    system: str
    run: str
    group: str
    score: Number
    matched: bool
    judge_value: Number | None
    quadrant: str | None
    best_match: BestMatch | None = None


class QuadrantPage(Answer):
    label: str
    high_hindsight: bool
    high_judge: bool
    total: int
    page: int
    page_size: int | None
    pages: int
    items: list[QuadrantIdea]


class Sort(Answer):
    by: str
    order: str


class QuadrantsOut(Answer):
    """GET /v1/analysis/quadrants."""

    selection: SelectionOut
    judge: str
    dimension: str
    cuts: Cuts
    quadrants: dict[str, str] = Field(description="Each quadrant's label.")
    scoring: list[ScoringContextRow]
    unscored_ideas: int
    windows: list[WindowCount]
    pooled_windows: bool
    leak_risk: LeakRisk
    warnings: list[WarningOut] = []
    counts: list[QuadrantCount]
    sort: Sort
    ideas: dict[str, QuadrantPage] = Field(description="Per quadrant, a sorted page of its ideas.")


class CutoffGroup(Answer):
    group: str
    system: str
    ideas: int
    mean_score: Number | None
    ci: list[Number] | None
    matched: int
    match_rate: Number | None
    knowledge_cutoff: str | None
    leak_risk: bool


class CutoffBlock(Answer):
    """The runs' ideas re-scored at one cutoff."""

    cutoff: str
    window: dict[str, str]
    papers: int
    impact: dict[str, Any] = Field(description="The window's citation normalisation.")
    groups: list[CutoffGroup]
    comparisons: list[Comparison]
    warnings: list[WarningOut]


class Stability(Answer):
    a: str
    b: str
    leader_by_cutoff: list[str | None]
    consistent: bool


class CutoffsOut(Answer):
    """GET /v1/analysis/cutoffs."""

    selection: SelectionOut
    index_version: str
    model: str
    theta: Number
    matcher: str
    top_k: int
    matcher_version: str | None = None
    thresholds: dict[str, Any] = {}
    built_window: dict[str, str]
    until: str
    ideas: int
    citation_normalisation: str
    stored: bool
    note: str
    cutoffs: list[CutoffBlock]
    stability: list[Stability]
