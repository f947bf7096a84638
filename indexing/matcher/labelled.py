"""Labelled ideas, read once for every use (dense theta from pairs, hybrid fitting, evaluation): JSONL, a JSON array
or CSV with a header; one table of field names and their aliases."""

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from indexing.embedders import Embedder
from indexing.matcher.facets import IdeaFacets, facets_of

# field -> the names it may be given under, first = the documented one
ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "text": ("text", "idea"),
    "problem": ("problem",),
    "method": ("method",),
    "papers": ("source_paper_id", "paper_id", "paper_ids", "source"),
    "kind": ("kind",),
    "venue": ("source_venue",),
    "fold": ("fold",),
    "style": ("style",),
}


class LabelledError(ValueError):
    """A labelled-ideas file that cannot be used; the message names the file, the line and the field."""


@dataclass
class LabelledIdea:
    id: str
    line: int
    problem: str | None = None
    method: str | None = None
    text: str | None = None
    papers: list[str] = field(default_factory=list)  # positives / the source; empty = none
    kind: str | None = None
    venue: str | None = None
    fold: str | None = None
    style: str | None = None
    key: str = ""  # the id, else the idea's text: rows with one key are one idea (pool_by_id)

    def facets(self, embedder: Embedder) -> IdeaFacets:
        return facets_of(embedder, problem=self.problem, method=self.method, text=self.text)

    @property
    def source(self) -> str | None:
        return self.papers[0] if self.papers else None


def read_records(path: Path) -> list[tuple[int, object]]:
    """(line or row number, record) from JSONL, a JSON array, or CSV with a header."""
    raw = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        return [(n, dict(r)) for n, r in enumerate(csv.DictReader(raw.splitlines()), start=2)]
    if raw.lstrip().startswith("["):
        try:
            return list(enumerate(json.loads(raw), start=1))
        except ValueError as exc:
            raise LabelledError(f"{path}: not valid JSON ({exc})") from None
    out: list[tuple[int, object]] = []
    for n, line in enumerate(raw.splitlines(), start=1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except ValueError as exc:
                raise LabelledError(f"{path}:{n}: not valid JSON ({exc})") from None
    return out


def _first(rec: dict, name: str) -> object:
    return next((rec[a] for a in ALIASES[name] if rec.get(a) not in (None, "")), None)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def parse(path: Path, n: int, rec: object) -> LabelledIdea:
    """One record; LabelledError names the file, line and field."""
    if not isinstance(rec, dict):
        raise LabelledError(f"{path}:{n}: each record must be an object")
    text, problem, method = (_text(_first(rec, f)) for f in ("text", "problem", "method"))
    if not (text or problem or method):
        raise LabelledError(f"{path}:{n}: field 'text': an idea needs 'text' (or 'idea') or 'problem' + 'method'")
    papers: list[str] = []
    for alias in ALIASES["papers"]:
        value = rec.get(alias)
        for v in value if isinstance(value, list) else [value]:
            if v not in (None, "") and str(v) not in papers:
                papers.append(str(v))
    idea_id, kind, venue, fold, style = (_first(rec, f) for f in ("id", "kind", "venue", "fold", "style"))
    return LabelledIdea(id=str(idea_id or f"line{n}"), line=n, problem=problem, method=method, text=text,
                        papers=papers, kind=str(kind) if kind else None, venue=str(venue) if venue else None,
                        fold=str(fold) if fold else None, style=str(style) if style else None,
                        key=str(idea_id or text or f"{problem}\x1f{method}"))


def read_labelled(path: Path, *, kinds: set[str] | None = None, sourceless: set[str] | None = None,
                  require_paper: bool = False) -> list[LabelledIdea]:
    """Every record as a LabelledIdea. kinds: the allowed `kind` values (then required); sourceless: kinds that
    need no source paper (every other kind does); require_paper: every idea names a paper."""
    out = []
    for n, rec in read_records(path):
        idea = parse(path, n, rec)
        if kinds is not None and idea.kind not in kinds:
            raise LabelledError(f"{path}:{n}: field 'kind': {idea.kind!r} is not one of {', '.join(sorted(kinds))}")
        needs = require_paper or (kinds is not None and idea.kind not in (sourceless or set()))
        if needs and not idea.papers:
            raise LabelledError(f"{path}:{n}: field '{ALIASES['papers'][0]}': "
                                f"{'a ' + idea.kind + ' idea' if idea.kind else 'a positive pair'} needs its paper id")
        out.append(idea)
    if not out:
        raise LabelledError(f"{path}: no ideas")
    return out


def pool_by_id(ideas: list[LabelledIdea]) -> list[LabelledIdea]:
    """Rows sharing an id (or, without ids, the same text) pool their papers into the first row."""
    pooled: dict[str, LabelledIdea] = {}
    for i in ideas:
        if i.key in pooled:
            pooled[i.key].papers += [p for p in i.papers if p not in pooled[i.key].papers]
        else:
            pooled[i.key] = i
    return list(pooled.values())
