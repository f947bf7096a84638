"""Read a file, a directory or uploaded files of ideas in one layout or `auto`; each file is recognised alone."""

import io
import json
import zipfile
from pathlib import Path, PurePosixPath

from service.ideas import ai_researcher, ai_scientist, jsonl
from service.ideas.records import LayoutError, ReadResult, SourceFile

FORMATS = ("auto", jsonl.NAME, ai_researcher.NAME, ai_scientist.NAME)
IDEA_SUFFIXES = (".json", ".jsonl", ".ndjson")
MAPPINGS: dict[str, dict[str, object]] = {ai_researcher.NAME: dict(ai_researcher.MAPPINGS),
                                          ai_scientist.NAME: dict(ai_scientist.MAPPINGS)}
DEFAULTS = {ai_researcher.NAME: ai_researcher.DEFAULT_MAPPING, ai_scientist.NAME: ai_scientist.DEFAULT_MAPPING}
DESCRIBE = {ai_researcher.NAME: ai_researcher.describe, ai_scientist.NAME: ai_scientist.describe}


def mapping_named(name: str | None) -> dict[str, str]:
    """--mapping NAME: the layout whose mapping it is -> NAME (names are distinct across layouts)."""
    if not name:
        return {}
    for layout, mappings in MAPPINGS.items():
        if name in mappings:
            return {layout: name}
    known = "; ".join(f"{layout}: {', '.join(m)}" for layout, m in MAPPINGS.items())
    raise LayoutError("<mapping>", "mapping", f"no mapping {name!r} (known: {known})")


def read_path(path: Path, fmt: str = "auto", *, mappings: dict[str, str] | None = None,
              max_chars: int | None = None) -> ReadResult:
    """A file, or every .json/.jsonl/.ndjson file under a directory (other files are listed as ignored)."""
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and not any(
            part.startswith(".") for part in p.relative_to(path).parts))
        files = [SourceFile(str(p), p.read_bytes()) for p in found if p.suffix.lower() in IDEA_SUFFIXES]
        ignored = [str(p) for p in found if p.suffix.lower() not in IDEA_SUFFIXES]
        if not files:
            raise LayoutError(str(path), "<directory>", "holds no .json, .jsonl or .ndjson file")
    else:
        files, ignored = [SourceFile(str(path), path.read_bytes())], []
    result = read_files(files, fmt, mappings=mappings, max_chars=max_chars)
    result.ignored = ignored
    return result


def unpack(files: list[SourceFile], *, limit: int) -> list[SourceFile]:
    """Uploaded files, with each .zip replaced by its idea files (named archive/entry), at most `limit` bytes."""
    out: list[SourceFile] = []
    for file in files:
        if not file.name.lower().endswith(".zip"):
            out.append(file)
            continue
        try:
            archive = zipfile.ZipFile(io.BytesIO(file.data))
        except zipfile.BadZipFile as exc:
            raise LayoutError(file.name, "<file>", f"not a zip archive ({exc})") from None
        entries = [e for e in archive.infolist() if not e.is_dir() and PurePosixPath(e.filename).suffix.lower()
                   in IDEA_SUFFIXES and not any(p.startswith((".", "__MACOSX")) for p in e.filename.split("/"))]
        if sum(e.file_size for e in entries) > limit:
            raise LayoutError(file.name, "<file>", f"unpacks to more than {limit} bytes (HINDSIGHT_MAX_UPLOAD_BYTES)")
        if not entries:
            raise LayoutError(file.name, "<file>", "holds no .json, .jsonl or .ndjson file")
        out += [SourceFile(f"{file.name}/{e.filename}", archive.read(e))
                for e in sorted(entries, key=lambda e: e.filename)]
    return out


def read_files(files: list[SourceFile], fmt: str = "auto", *, mappings: dict[str, str] | None = None,
               max_chars: int | None = None) -> ReadResult:
    """Every file read in the given layout (auto: each recognised alone); LayoutError for a file that fits none."""
    if fmt not in FORMATS:
        raise LayoutError("<format>", "format", f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    chosen = {**DEFAULTS, **(mappings or {})}
    for layout, name in chosen.items():
        if name not in MAPPINGS[layout]:
            raise LayoutError("<mapping>", "mapping", f"{layout} mappings are {', '.join(MAPPINGS[layout])}, "
                                                      f"not {name!r}")
    result = ReadResult(files=len(files))
    for file in files:
        read_as = _read_one(file, fmt, result, chosen, max_chars)
        if read_as is None:
            continue
        if read_as not in result.formats:
            result.formats.append(read_as)
            if read_as in DESCRIBE:
                result.mappings[read_as] = DESCRIBE[read_as](chosen[read_as])
    if result.literature:
        _note_literature(result, files)
    return result


def _note_literature(result: ReadResult, files: list[SourceFile]) -> None:
    """One line per folder of a generator's literature files; a read of nothing else is no read of ideas."""
    folders: dict[str, int] = {}
    for name in result.literature:
        parent = str(PurePosixPath(name.replace("\\", "/")).parent)
        folders[parent] = folders.get(parent, 0) + 1
    for folder, n in folders.items():
        result.notes.append(f"{folder}/: {n} file(s) of AI-Researcher's literature review (the papers it retrieved "
                            "before generating, not ideas): skipped")
    if len(result.literature) == len(files):
        first = result.literature[0]
        raise LayoutError(first, "paper_bank", "AI-Researcher's literature review (the papers it retrieved), not "
                                               "ideas: score its experiment_plans/ folder or the repository's folder")


def _read_one(file: SourceFile, fmt: str, result: ReadResult, mappings: dict[str, str],
              max_chars: int | None) -> str | None:
    """The layout the file was read in; None for a generator's literature file (skipped, listed)."""
    try:
        text = file.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LayoutError(file.name, "<file>", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise LayoutError(file.name, "<file>", "empty file")
    try:
        value = json.loads(text)
        whole = True
    except json.JSONDecodeError as exc:
        if fmt not in ("auto", jsonl.NAME):
            raise LayoutError(file.name, "<file>", f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") \
                from None
        value, whole = None, False
    if whole and fmt in ("auto", ai_researcher.NAME) and ai_researcher.is_literature(value):
        result.literature.append(file.name)
        return None
    layout = fmt if fmt != "auto" else _recognise(file, value) if whole else jsonl.NAME
    if layout == jsonl.NAME:
        if whole and isinstance(value, list):  # one JSON array of ideas, as many tools write them: record = index
            rows = list(enumerate(value, start=1))
        else:
            rows = [(1, value)] if whole else jsonl.parse(file, text)
        if fmt == jsonl.NAME and whole and not jsonl.fits(value):
            raise LayoutError(file.name, "id", "a JSONL idea needs 'id' and 'problem'/'method' or 'text'")
        jsonl.read(file, rows, result, max_chars=max_chars)
    elif layout == ai_researcher.NAME:
        ai_researcher.read(file, value, result, mapping=mappings[layout], max_chars=max_chars)
    else:
        ai_scientist.read(file, value, result, mapping=mappings[layout], max_chars=max_chars)
    return layout


def _recognise(file: SourceFile, value: object) -> str:
    if ai_scientist.fits(value):
        return ai_scientist.NAME
    if ai_researcher.fits(value):
        return ai_researcher.NAME
    if jsonl.fits(value) or (isinstance(value, list) and value and all(jsonl.fits(v) for v in value)):
        return jsonl.NAME
    if isinstance(value, list):
        raise LayoutError(file.name, "Experiment", "fits no layout: a JSON array reads as an AI-Scientist "
                                                   "ideas.json, whose ideas have 'Name', 'Title' and 'Experiment'; "
                                                   + ("this one is empty" if not value else "its first record has "
                                                      + _keys(value[0])))
    raise LayoutError(file.name, "full_experiment_plan", "fits no layout: a JSON object reads as an AI-Researcher "
                                                         "plan (with 'full_experiment_plan' or 'raw_idea') or as one "
                                                         "JSONL idea (with 'id' and 'problem'/'method'/'text'); "
                                                         "this one has " + _keys(value))


def _keys(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(repr(k) for k in list(value)[:8]) or "no fields"
    return f"a JSON {type(value).__name__}"
