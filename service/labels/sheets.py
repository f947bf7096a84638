"""A draw as a sheet: one row per drawn idea and candidate, with the texts a reader needs and a blank label to fill
(in a spreadsheet, on another machine, or by a model); `label import` reads a filled sheet back."""

import csv
import io
import json

from sqlalchemy import select
from sqlalchemy.orm import Session

from indexing.models import Idea, Run
from service.labels.candidates import candidates_of, lookback_candidates_of
from service.labels.draws import LabelError
from service.labels.models import Draw, DrawIdea

# the short columns first, so that they stay in view beside the long texts; `label` and `annotator` are to fill;
# `how_to_label` holds the protocol in short on the sheet's first row
FIELDS = ("draw", "system", "run", "position", "idea_id", "side", "rank", "paper_id", "label", "annotator",
          "how_to_label", "similarity", "title", "evidence_sentence", "abstract", "problem", "method", "text")
# the protocol for direction and realised (docs/labels.md, in full docs/labels-protocol.md), as the sheet carries it
PROTOCOL = ("Label each candidate realised, direction or none (docs/labels-protocol.md). 1. Before reading the "
            "candidates, write the idea's problem as one sentence '<failure or task> of <object> on <input / "
            "setting>' at the grain of a paper title, from its problem statement, with no word of its method; a "
            "bare area (hallucination, bias, LLM safety, math reasoning) is not a problem. 2. direction: the "
            "paper's own title or abstract states a task or failure and a setting that fill the same three slots "
            "(names may differ); one slot one step narrower counts, one step wider only if the abstract names the "
            "idea's case; a benchmark or analysis of the failure counts only if the idea measures it too or the "
            "paper also tests a remedy; applicable is not stated. 3. realised: direction, and the paper's core "
            "mechanism is the idea's method (details, data, names may differ); the same method on another problem "
            "is none. When unsure, take the narrower answer.")
# the columns import reads; the others are there to be read by whoever labels
KEYS = {"draw", "idea_id", "side", "paper_id", "label", "annotator"}
FORMATS = ("jsonl", "csv")


def sheet_rows(session: Session, *, draws: list[int], candidates: int) -> list[dict]:
    """Every idea of the draws in draw order, each with its first `candidates` stored candidates in rank order, those
    after the cutoff and then those before it (the look-back side)."""
    if candidates < 1:
        raise LabelError("candidates", f"must be at least 1, got {candidates}")
    rows: list[dict] = []
    for draw_id in dict.fromkeys(draws):
        found = session.get(Draw, draw_id)
        if found is None:
            raise LabelError("draw", f"no draw {draw_id}", 404)
        run = session.get(Run, found.run_id)
        assert run is not None
        members = session.execute(select(DrawIdea.position, Idea).join(Idea, Idea.pk == DrawIdea.idea_pk)
                                  .where(DrawIdea.draw_id == draw_id).order_by(DrawIdea.position)).all()
        for position, idea in members:
            sides = [("after", c) for c in candidates_of(session, idea.pk, candidates)]
            sides += [("before", c) for c in lookback_candidates_of(session, idea.pk, candidates)]
            for side, c in sides:
                rows.append({"draw": draw_id, "system": run.system, "run": run.label, "position": position,
                             "idea_id": idea.idea_id, "side": side, "rank": c["rank"], "paper_id": c["paper_id"],
                             "label": "", "annotator": "", "how_to_label": "" if rows else PROTOCOL,
                             "similarity": round(float(c["similarity"]), 4),
                             "title": c["title"], "evidence_sentence": c["evidence_sentence"] or "",
                             "abstract": c["abstract"] or "", "problem": idea.problem or "",
                             "method": idea.method or "", "text": idea.text or ""})
    return rows


def to_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def to_csv(rows: list[dict]) -> str:
    """The rows as CSV with a header, as spreadsheets write it as 'CSV UTF-8' (a BOM, quoted where needed, CRLF line
    ends): without the BOM, Excel opening the file reads it in the machine's legacy code page."""
    out = io.StringIO()
    out.write("\ufeff")
    writer = csv.DictWriter(out, fieldnames=FIELDS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def is_csv(text: str) -> bool:
    """A sheet saved by a spreadsheet: its first non-blank line is a header naming the sheet's columns."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return not first.lstrip().startswith(("{", "[")) and "paper_id" in first and "idea_id" in first


def read_csv(text: str) -> tuple[list[tuple[int, dict]], list[str]]:
    """(line, row) per data row of a CSV sheet (whatever the delimiter a spreadsheet chose: comma, semicolon, tab),
    and the header's columns."""
    header = next(line for line in text.splitlines() if line.strip())
    delimiter = max((",", ";", "\t"), key=header.count)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows = []
    for row in reader:
        if not any((v or "").strip() for k, v in row.items() if k is not None):
            continue  # an empty line a spreadsheet left at the end
        rows.append((reader.line_num, {(k or "").strip(): v for k, v in row.items()}))
    return rows, [(c or "").strip() for c in reader.fieldnames or []]
