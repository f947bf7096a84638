"""What the estimates and the agreement read per idea: its stored candidates with the matcher's and the verifier's
calls, and every annotator's labels."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.models import Match, Score
from service.labels.models import Draw, DrawIdea, Label


@dataclass
class Candidate:
    rank: int
    paper_id: str
    impact: float
    similarity: float
    matcher_realised: bool  # the embedding matcher's call (before any verifier)
    matcher_direction: bool
    p_realised: float | None  # the hybrid matcher's probabilities (None: dense)
    p_direction: float | None
    verifier_realised: bool | None  # the verifier's call (None: not read)
    verifier_direction: bool | None
    verifier_p_realised: float | None
    verifier_p_direction: float | None


@dataclass
class IdeaCalls:
    idea_pk: int
    score: float
    verified: bool
    embedding_score: float | None
    version: tuple[str, str, str] | None = None  # index version, cutoff and window end the score was made in
    candidates: list[Candidate] = field(default_factory=list)
    stored_direction: bool = False  # the stored decision (the verifier's where verified)


def _chunks(values: list[int], size: int = 500):
    for start in range(0, len(values), size):
        yield values[start:start + size]


def load_calls(session: Session, idea_pks) -> dict[int, IdeaCalls]:
    """Per idea pk: its score and every stored candidate with the calls made on it."""
    pks = sorted({int(p) for p in idea_pks})
    out: dict[int, IdeaCalls] = {}
    for chunk in _chunks(pks):
        for s in session.scalars(select(Score).where(Score.idea_pk.in_(chunk))):
            out[s.idea_pk] = IdeaCalls(s.idea_pk, s.score, s.verifier is not None, s.embedding_score,
                                       (s.index_version, s.cutoff.isoformat(), s.window_end.isoformat()))
        rows = session.execute(select(Score.idea_pk, Score.verifier, Match).join(Match, Match.score_id == Score.id)
                               .where(Score.idea_pk.in_(chunk)).order_by(Score.idea_pk, Match.rank)).all()
        for pk, verifier, m in rows:
            stored_r = bool(m.realised if m.realised is not None else m.above_threshold)
            stored_d = bool(m.direction if m.direction is not None else stored_r)
            if verifier is not None:  # a verified score stores the verifier's calls; the embedding's beside them
                emb_r = bool(m.embedding_realised) if m.embedding_realised is not None else stored_r
                emb_d = bool(m.embedding_direction) if m.embedding_direction is not None else stored_d
                read = m.verifier_p_direction is not None
                ver_r, ver_d = (stored_r, stored_d) if read else (None, None)
            else:
                emb_r, emb_d, ver_r, ver_d = stored_r, stored_d, None, None
            out[pk].stored_direction = out[pk].stored_direction or stored_d
            out[pk].candidates.append(Candidate(
                m.rank, m.paper_id, m.impact, m.similarity, emb_r, emb_d, m.p_realised, m.p_direction, ver_r, ver_d,
                m.verifier_p_realised, m.verifier_p_direction))
    return out


def load_labels(session: Session, idea_pks) -> dict[str, dict[int, dict[str, tuple[str, datetime]]]]:
    """annotator -> idea pk -> paper id -> (label, time written)."""
    out: dict[str, dict[int, dict[str, tuple[str, datetime]]]] = {}
    for chunk in _chunks(sorted({int(p) for p in idea_pks})):
        for lab in session.scalars(select(Label).where(Label.idea_pk.in_(chunk))):
            out.setdefault(lab.annotator, {}).setdefault(lab.idea_pk, {})[lab.paper_id] = (lab.label, lab.created_at)
    return out


def drawn_ideas(session: Session, idea_pks) -> dict[int, int]:
    """Idea pk -> the draw it was drawn in, for the ideas that were."""
    out: dict[int, int] = {}
    for chunk in _chunks(sorted({int(p) for p in idea_pks})):
        out.update(session.execute(select(DrawIdea.idea_pk, DrawIdea.draw_id).join(Draw, Draw.id == DrawIdea.draw_id)
                                   .where(DrawIdea.idea_pk.in_(chunk))).all())
    return out


def first_annotator(labels: dict[str, dict[int, dict[str, tuple[str, datetime]]]], pks: set[int]) -> str | None:
    """The annotator who labelled first among these ideas (the one the estimates use unless told)."""
    firsts = {a: min((t for pk, papers in ideas.items() if pk in pks for _, t in papers.values()), default=None)
              for a, ideas in labels.items()}
    dated = [(str(t), a) for a, t in firsts.items() if t is not None]
    return min(dated)[1] if dated else None


def truth_of(labels: dict[str, tuple[str, Any]], calls: IdeaCalls | None,
             impacts: dict[str, float]) -> tuple[bool, bool, float | None]:
    """An idea's labelled realised and direction decisions and its labelled score (max impact over the papers
    labelled realised; None when such a paper's impact is unknown)."""
    realised = [p for p, (lab, _) in labels.items() if lab == "realised"]
    direction = any(lab in ("realised", "direction") for lab, _ in labels.values())
    stored = {c.paper_id: c.impact for c in calls.candidates} if calls else {}
    values = [stored.get(p, impacts.get(p)) for p in realised]
    score = None if any(v is None for v in values) else max((float(v) for v in values if v is not None), default=0.0)
    return bool(realised), direction, score
