"""AI-Scientist (SakanaAI/AI-Scientist): `ideas.json`, an array of {Name, Title, Experiment, Interestingness,
Feasibility, Novelty, novel}: the method in prose, no separate problem, and the generator's own LLM ratings."""

from dataclasses import dataclass

from service.ideas.records import LayoutError, ReadResult, SourceFile
from service.ideas.text import as_text
from service.judge_scores import number_of
from service.schemas import Origin

NAME = "ai-scientist"
JUDGE = "ai-scientist-self"
# the generator's rating -> the judge dimension it is stored as; `novel` (its Semantic Scholar check) as 1 or 0
RATINGS = {"Interestingness": "interestingness", "Feasibility": "feasibility", "Novelty": "novelty", "novel": "novel"}
KEYS = ("Name", "Title", "Experiment")


@dataclass(frozen=True)
class Mapping:
    problem: str | None
    method: str


MAPPINGS = {"title+experiment": Mapping("Title", "Experiment"), "experiment": Mapping(None, "Experiment")}
DEFAULT_MAPPING = "title+experiment"


def fits(value: object) -> bool:
    return isinstance(value, list) and any(isinstance(v, dict) and any(k in v for k in KEYS) for v in value)


def describe(name: str) -> dict:
    mapping = MAPPINGS[name]
    return {"name": name, "problem": [mapping.problem] if mapping.problem else [], "method": [mapping.method],
            "judge": JUDGE, "ratings": RATINGS}


def read(file: SourceFile, value: object, result: ReadResult, *, mapping: str, max_chars: int | None) -> None:
    if not fits(value):
        what = "an empty array" if value == [] else f"a JSON {type(value).__name__}"
        raise LayoutError(file.name, "Experiment", "an AI-Scientist ideas.json is a JSON array of ideas with 'Name', "
                                                   f"'Title' and 'Experiment'; this file holds {what}")
    assert isinstance(value, list)
    chosen = MAPPINGS[mapping]
    topic = file.topic
    names: dict[str, int] = {}
    for index, obj in enumerate(value):
        record = f"[{index}]"
        if not isinstance(obj, dict):
            result.refuse(file, record, "<record>", f"expected an object, got {type(obj).__name__}")
            continue
        name, method = as_text(obj.get("Name")), as_text(obj.get(chosen.method))
        if not name:
            result.refuse(file, record, "Name", "missing or empty: it is the idea's id")
            continue
        record = f"[{index}] {name}"
        if not method:
            result.refuse(file, record, chosen.method, "missing or empty")
            continue
        ratings, bad = {}, None
        for key, dimension in RATINGS.items():
            raw = obj.get(key)
            try:
                rating = (float(raw) if key == "novel" and isinstance(raw, bool) else
                          None if key == "novel" and raw is None else number_of(raw))
            except ValueError as exc:
                bad = (key, str(exc))
                break
            if rating is not None:
                ratings[dimension] = rating
        if bad:
            result.refuse(file, record, *bad)
            continue
        title = as_text(obj.get("Title")) or None
        origin = Origin(file=file.name, generator=NAME, topic=topic, title=title)
        idea_id = f"{topic}/{name}" if topic else name
        if name in names:  # AI-Scientist reuses a Name for a different later idea: both are kept
            result.notes.append(f"{file.name}: record {record}: Name {name!r} repeats record [{names[name]}]; "
                                f"stored as {idea_id}#{index}")
            idea_id = f"{idea_id}#{index}"
        names.setdefault(name, index)
        result.add(file, record, idea_id=idea_id, origin=origin, ratings=ratings, judge=JUDGE,
                   max_chars=max_chars, problem=as_text(obj.get(chosen.problem)) or None if chosen.problem else None,
                   method=method)
