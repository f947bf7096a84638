"""An import's rows read and checked before anything is written: the three file formats (labels, judged, sheet),
each fault named by line and field."""

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.models import Idea, Match, Paper, Score
from service.labels.draws import LabelError, runs_of
from service.labels import sheets, sides
from service.labels.models import LABELS, Draw, DrawIdea
from service.rejections import ImportReportBase, RowError

FORMATS = ("auto", "labels", "judged", "sheet")
LABEL_FIELDS = {"run", "system", "idea_id", "paper_id", "label", "annotator", "time"}
JUDGED_LISTS = ("reviewed", "same_problem", "same_problem_and_approach")
# the project's judged files carry topic, title and notes; run, system and annotator may name what the command line
# would
JUDGED_FIELDS = {"idea", "topic", "title", "notes", "run", "system", "annotator", *JUDGED_LISTS}
MAX_ERRORS = 200
NO_ANNOTATOR = "missing: give it in the row or as the import's annotator (--annotator; ?annotator= over HTTP)"


@dataclass
class ImportReport(ImportReportBase):
    file: str
    format: str = ""
    rows: int = 0
    blank: int = 0  # a sheet's rows left without a label: skipped, not read as `none`
    labels: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    written: bool = False
    annotators: list[str] = field(default_factory=list)
    ideas: int = 0
    ideas_outside_draws: int = 0
    errors: list[RowError] = field(default_factory=list)


@dataclass
class Pair:
    line: int
    idea_pk: int
    paper_id: str
    annotator: str
    label: str
    time: datetime | None


class Ideas:
    """Idea lookups per run reference, each run reference resolved once."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.cache: dict[tuple[str, str | None], dict[str, list[int]] | str] = {}

    def find(self, run: str, system: str | None, idea_id: str) -> int | str:
        """The idea's pk, or what is wrong as a message (field named by the caller)."""
        key = (run, system)
        if key not in self.cache:
            try:
                strata = runs_of(self.session, run, system)
            except LabelError as exc:
                self.cache[key] = exc.message
            else:
                index: dict[str, list[int]] = {}
                for pk, iid in self.session.execute(select(Idea.pk, Idea.idea_id).where(
                        Idea.run_id.in_([r.id for r in strata]))):
                    index.setdefault(iid, []).append(pk)
                self.cache[key] = index
        found = self.cache[key]
        if isinstance(found, str):
            return found
        pks = found.get(idea_id, [])
        if not pks:
            return f"run {run!r}" + (f" (system {system!r})" if system else "") + f" has no idea {idea_id!r}"
        if len(pks) > 1:
            return f"idea {idea_id!r} is in several systems' runs labelled {run!r}: add \"system\""
        return pks[0]

    def in_draw(self, draw_id: int, idea_id: str) -> int | str:
        """The pk of the draw's idea with this id, or what is wrong as a message."""
        key = (f"draw {draw_id}", None)
        if key not in self.cache:
            if self.session.get(Draw, draw_id) is None:
                self.cache[key] = f"no draw {draw_id}"
            else:
                self.cache[key] = {iid: [pk] for pk, iid in self.session.execute(
                    select(Idea.pk, Idea.idea_id).join(DrawIdea, DrawIdea.idea_pk == Idea.pk)
                    .where(DrawIdea.draw_id == draw_id))}
        found = self.cache[key]
        if isinstance(found, str):
            return found
        pks = found.get(idea_id)
        return pks[0] if pks else f"draw {draw_id} has no idea {idea_id!r}"


def _text(value: object, limit: int = 255) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() and len(value) <= limit else None


def _when(value: object) -> datetime | None:
    if not isinstance(value, str):
        raise ValueError("expected an ISO date-time string")
    return aware(datetime.fromisoformat(value))


def aware(when: datetime) -> datetime:
    """SQLite hands back naive times; they were written in UTC."""
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def parse_rows(session: Session, data: bytes, *, fmt: str, run: str | None, system: str | None,
           annotator: str | None, report: ImportReport) -> list[Pair]:
    """Every pair the file labels; every fault into the report, by line and field."""
    errors = report.errors

    def bad(line: int, name: str, message: str) -> None:
        if len(errors) < MAX_ERRORS:
            errors.append(RowError(line, name, message))

    if fmt not in FORMATS:
        bad(0, "format", f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
        return []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad(1, "<file>", f"not UTF-8 text ({exc.reason} at byte {exc.start}); a spreadsheet saves it as "
                         "'CSV UTF-8'")
        return []
    ideas = Ideas(session)
    pairs: list[Pair] = []
    sided: list[tuple[Pair, str]] = []  # a sheet's pairs with the side of the cutoff its row names
    formats: set[str] = set()
    for line, row in _rows(text, fmt, bad):
        report.rows += 1
        if row is None:
            continue
        kind = fmt if fmt != "auto" else ("sheet" if "draw" in row else
                                          "judged" if "idea" in row or "reviewed" in row else "labels")
        formats.add(kind)
        if kind == "sheet":
            pair = _sheet_row(line, row, annotator, ideas, bad, report)
            pairs += [pair] if pair else []
            sided += [(pair, str(row.get("side") or "after").strip().lower())] if pair else []
            continue
        who = row.get("annotator", annotator)
        who_ok = _text(who, 128)
        if who_ok is None:
            bad(line, "annotator", NO_ANNOTATOR if who is None
                else f"expected a non-empty string of at most 128 characters, got {str(who)[:40]!r}")
        if kind == "labels":
            unknown = sorted(set(row) - LABEL_FIELDS)
            if unknown:
                bad(line, unknown[0], f"unknown field (expected {', '.join(sorted(LABEL_FIELDS))})")
            run_ref = row.get("run", run)
            sys_ref = row.get("system", system)
            idea_id, paper_id, label = row.get("idea_id"), row.get("paper_id"), row.get("label")
            when = None
            if "time" in row:
                try:
                    when = _when(row["time"])
                except ValueError as exc:
                    bad(line, "time", str(exc))
            if label not in LABELS:
                bad(line, "label", f"expected one of {', '.join(LABELS)}, got {str(label)[:40]!r}")
            if _text(paper_id) is None:
                bad(line, "paper_id", "missing or not a non-empty string")
            wanted = [(str(paper_id).strip() if isinstance(paper_id, str) else "", str(label))]
        else:
            unknown = sorted(set(row) - JUDGED_FIELDS)
            if unknown:
                bad(line, unknown[0], f"unknown field (expected {', '.join(sorted(JUDGED_FIELDS))})")
            run_ref, sys_ref, idea_id, when = row.get("run", run), row.get("system", system), row.get("idea"), None
            lists: dict[str, list[str]] = {}
            for name in JUDGED_LISTS:
                value = row.get(name, [])
                if not isinstance(value, list) or not all(_text(v) for v in value):
                    bad(line, name, "expected a list of paper ids")
                    value = []
                lists[name] = [v.strip() for v in value]
            realised, direction = set(lists["same_problem_and_approach"]), set(lists["same_problem"])
            seen = list(dict.fromkeys(lists["reviewed"] + lists["same_problem"] + lists["same_problem_and_approach"]))
            wanted = [(p, "realised" if p in realised else "direction" if p in direction else "none") for p in seen]
        if _text(run_ref) is None:
            bad(line, "run", "missing: give it in the row or as the import's run (--run; ?run= over HTTP)")
            continue
        if sys_ref is not None and _text(sys_ref) is None:
            bad(line, "system", "expected a non-empty string")
            continue
        if _text(idea_id) is None:
            bad(line, "idea_id" if kind == "labels" else "idea", "missing or not a non-empty string")
            continue
        found = ideas.find(str(run_ref).strip(), sys_ref, str(idea_id).strip())
        if isinstance(found, str):
            bad(line, "run" if found.startswith("no run") else "idea_id" if kind == "labels" else "idea", found)
            continue
        if who_ok is None or any(p == "" or lab not in LABELS for p, lab in wanted):
            continue
        pairs += [Pair(line, found, p, who_ok, lab, when) for p, lab in wanted]
    if report.rows == 0:
        bad(1, "<file>", "holds no labels rows")
    report.format = "+".join(sorted(formats)) or fmt
    check_papers(session, pairs, bad)
    sides.check_sides(session, [(p.line, p.idea_pk, p.paper_id, side) for p, side in sided], bad)
    check_repeats(pairs, bad)
    return pairs


def _rows(text: str, fmt: str, bad):
    """(line, row) per record: a JSON object per line, or a CSV sheet's rows; None for a line that is no object."""
    if fmt in ("auto", "sheet") and sheets.is_csv(text):
        yield from sheets.read_csv(text)[0]
        return
    for line, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            bad(line, "<json>", f"not a JSON object ({exc.msg} at column {exc.colno})")
            yield line, None
            continue
        if not isinstance(row, dict):
            bad(line, "<json>", "not a JSON object" + (
                ": a JSON array of rows; import reads one object per line (JSON Lines, as pandas writes with "
                "to_json(orient='records', lines=True))" if isinstance(row, list) else ""))
            yield line, None
            continue
        yield line, row


def _sheet_row(line: int, row: dict, annotator: str | None, ideas: Ideas, bad,
               report: ImportReport) -> Pair | None:
    """A sheet's row as a pair, or None: a row left without a label is skipped (counted), not read as `none`;
    the columns other than the keys are there to be read and are not checked."""
    raw = row.get("label")
    label = raw.strip().lower() if isinstance(raw, str) else raw
    if label is None or label == "":
        report.blank += 1
        return None
    ok = True
    if label not in LABELS:
        bad(line, "label", f"expected one of {', '.join(LABELS)} or blank, got {str(raw)[:40]!r}")
        ok = False
    side = row.get("side")
    side = (side.strip().lower() if isinstance(side, str) else side) or "after"
    if side not in sides.SIDES:
        bad(line, "side", f"expected {' or '.join(sides.SIDES)}, got {str(row.get('side'))[:40]!r}")
        ok = False
    who = row.get("annotator") or annotator
    who_ok = _text(who, 128)
    if who_ok is None:
        bad(line, "annotator", NO_ANNOTATOR if not who
            else f"expected a non-empty string of at most 128 characters, got {str(who)[:40]!r}")
        ok = False
    paper_id = _text(row.get("paper_id"))
    if paper_id is None:
        bad(line, "paper_id", "missing or not a non-empty string")
        ok = False
    number = row.get("draw")
    draw_id = number if isinstance(number, int) and not isinstance(number, bool) else \
        int(number.strip()) if isinstance(number, str) and number.strip().isascii() and number.strip().isdigit() \
        else None
    idea_id = _text(row.get("idea_id"))
    if draw_id is None:
        bad(line, "draw", f"expected a draw id, got {str(number)[:40]!r}")
        return None
    if idea_id is None:
        bad(line, "idea_id", "missing or not a non-empty string")
        return None
    found = ideas.in_draw(draw_id, idea_id)
    if isinstance(found, str):
        bad(line, "draw" if found.startswith("no draw") else "idea_id", found)
        return None
    if not ok:
        return None
    assert who_ok is not None and paper_id is not None
    return Pair(line, found, paper_id, who_ok, str(label), None)


def check_papers(session: Session, pairs: list[Pair], bad) -> None:
    """A label may name any paper of the store or any stored candidate of its idea; anything else is unknown."""
    ids = sorted({p.paper_id for p in pairs})
    known: set[str] = set()
    for start in range(0, len(ids), 500):  # SQLite caps bound parameters
        chunk = ids[start:start + 500]
        known |= set(session.scalars(select(Paper.paper_id).where(Paper.paper_id.in_(chunk))))
    missing = {p.paper_id for p in pairs} - known
    if not missing:
        return
    pks = sorted({p.idea_pk for p in pairs if p.paper_id in missing})
    shown: set = set()
    for start in range(0, len(pks), 500):
        shown |= set(session.execute(select(Score.idea_pk, Match.paper_id).join(Match, Match.score_id == Score.id)
                                     .where(Score.idea_pk.in_(pks[start:start + 500]))).all())
    for p in pairs:
        if p.paper_id in missing and (p.idea_pk, p.paper_id) not in shown:
            bad(p.line, "paper_id", f"unknown paper {p.paper_id!r}: not in the paper store nor among the idea's "
                                    "stored candidates")


def check_repeats(pairs: list[Pair], bad) -> None:
    first: dict[tuple[int, str, str], Pair] = {}
    for p in pairs:
        key = (p.idea_pk, p.paper_id, p.annotator)
        if key in first and first[key].label != p.label:
            bad(p.line, "label", f"{p.label!r} contradicts line {first[key].line} ({first[key].label!r}) for the same "
                                 f"idea, paper {p.paper_id!r} and annotator {p.annotator!r}")
        first.setdefault(key, p)
