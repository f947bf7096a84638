"""Both sides of an idea's cutoff in its labels: a labelled paper published before the cutoff the idea was scored at
is on the look-back side (prior art), one published on or after it on the forward side. The look-back candidates
with the matcher's calls (for the agreement), the stored prior-art classes, and an idea's class from its labels."""

from datetime import date
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.models import Paper, Score
from service.labels.pairs import Candidate, IdeaCalls, _chunks
from service.prior_art.classes import class_of
from service.prior_art.models import PriorArt, PriorArtMatch

AFTER, BEFORE = "after", "before"
SIDES = (AFTER, BEFORE)

Labels = dict[str, tuple[str, Any]]  # paper id -> (label, time)


def paper_dates(session: Session, paper_ids) -> dict[str, date]:
    """Publication date of each paper of the store among these ids."""
    ids = sorted({str(p) for p in paper_ids})
    out: dict[str, date] = {}
    for at in range(0, len(ids), 500):
        out.update(session.execute(select(Paper.paper_id, Paper.publication_date)
                                   .where(Paper.paper_id.in_(ids[at:at + 500]))).all())
    return out


def side_of(published: date | None, cutoff: date | str | None) -> str:
    """`before` for a paper published before the cutoff, else `after` (also when either date is unknown)."""
    if published is None or cutoff is None:
        return AFTER
    day = cutoff if isinstance(cutoff, date) else date.fromisoformat(str(cutoff)[:10])
    return BEFORE if published < day else AFTER


def split(labels: Labels, cutoff: date | str | None, dates: dict[str, date]) -> dict[str, Labels]:
    """One idea's labels by side of its cutoff."""
    out: dict[str, Labels] = {AFTER: {}, BEFORE: {}}
    for paper, value in labels.items():
        out[side_of(dates.get(paper), cutoff)][paper] = value
    return out


def split_all(session: Session, labelled: dict[int, Labels],
              calls: dict[int, IdeaCalls]) -> dict[str, dict[int, Labels]]:
    """Every idea's labels by side of the cutoff it was scored at; an idea appears on a side only when it has a label
    there (a side it was not read on is not a side labelled `none`)."""
    dates = paper_dates(session, {p for papers in labelled.values() for p in papers})
    out: dict[str, dict[int, Labels]] = {AFTER: {}, BEFORE: {}}
    for pk, papers in labelled.items():
        c = calls.get(pk)
        for side, part in split(papers, c.version[1] if c and c.version else None, dates).items():
            if part:
                out[side][pk] = part
    return out


def load_lookback_calls(session: Session, idea_pks) -> dict[int, IdeaCalls]:
    """Per idea pk with a stored look-back side: its look-back candidates with the matcher's (and verifier's) calls,
    in the shape the agreement reads for the forward side."""
    out: dict[int, IdeaCalls] = {}
    for chunk in _chunks(sorted({int(p) for p in idea_pks})):
        rows = session.execute(
            select(Score.idea_pk, Score.index_version, Score.cutoff, Score.window_end, PriorArt.verifier,
                   PriorArtMatch).join(PriorArt, PriorArt.score_id == Score.id)
            .join(PriorArtMatch, PriorArtMatch.prior_art_id == PriorArt.id)
            .where(Score.idea_pk.in_(chunk)).order_by(Score.idea_pk, PriorArtMatch.rank)).all()
        for pk, version, cutoff, end, verifier, m in rows:
            calls = out.setdefault(pk, IdeaCalls(pk, 0.0, verifier is not None, None,
                                                 (version, cutoff.isoformat(), end.isoformat())))
            read = verifier is not None and m.verifier_p_direction is not None
            emb_r = bool(m.embedding_realised) if read and m.embedding_realised is not None else bool(m.realised)
            emb_d = bool(m.embedding_direction) if read and m.embedding_direction is not None else bool(m.direction)
            calls.stored_direction = calls.stored_direction or bool(m.direction)
            calls.candidates.append(Candidate(
                m.rank, m.paper_id, 0.0, m.similarity, emb_r, emb_d, m.p_realised, m.p_direction,
                bool(m.realised) if read else None, bool(m.direction) if read else None,
                m.verifier_p_realised, m.verifier_p_direction))
    return out


def stored_classes(session: Session, idea_pks) -> dict[int, dict[str, str]]:
    """Per idea pk with a stored look-back side: the matcher's class at each level (`unknown` included)."""
    out: dict[int, dict[str, str]] = {}
    for chunk in _chunks(sorted({int(p) for p in idea_pks})):
        for pk, realised, direction in session.execute(
                select(Score.idea_pk, PriorArt.class_realised, PriorArt.class_direction)
                .join(PriorArt, PriorArt.score_id == Score.id).where(Score.idea_pk.in_(chunk))).all():
            out[pk] = {"realised": realised, "direction": direction}
    return out


def labelled_classes(after: Labels, before: Labels) -> dict[str, str]:
    """An idea's class at each level from its labels on both sides (each side read by the annotator)."""
    def hit(labels: Labels, level: str) -> bool:
        wanted = ("realised",) if level == "realised" else ("realised", "direction")
        return any(lab in wanted for lab, _ in labels.values())
    return {level: class_of(hit(after, level), hit(before, level)) for level in ("realised", "direction")}



def check_sides(session: Session, rows: list[tuple[int, int, str, str]], bad) -> None:
    """A sheet row's side must be the side of its idea's cutoff its paper was published on: (line, idea pk, paper id,
    side) per row; a paper or cutoff the store cannot date is not checked."""
    if not rows:
        return
    dates = paper_dates(session, {paper for _, _, paper, _ in rows})
    cutoffs: dict[int, date] = {}
    for chunk in _chunks(sorted({pk for _, pk, _, _ in rows})):
        cutoffs.update(session.execute(select(Score.idea_pk, Score.cutoff).where(Score.idea_pk.in_(chunk))).all())
    for line, pk, paper, side in rows:
        published, cutoff = dates.get(paper), cutoffs.get(pk)
        if published is None or cutoff is None or side_of(published, cutoff) == side:
            continue
        where = "before" if published < cutoff else "on or after"
        bad(line, "side", f"{side!r}, but paper {paper!r} was published {published}, {where} the cutoff {cutoff} "
                          f"its idea was scored at")
