"""What a reader returns: each idea with its origin (and the generator's own ratings), each refused record."""

from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath

from pydantic import ValidationError

from indexing.errors import DomainError

from service.schemas import IdeaIn, Origin


@dataclass(frozen=True)
class SourceFile:
    """One input file: its name (a relative path inside a directory or an archive) and its bytes."""

    name: str
    data: bytes

    @property
    def topic(self) -> str | None:
        """The folder that holds the file (AI-Researcher writes TOPIC/NAME.json, AI-Scientist TEMPLATE/ideas.json)."""
        parent = PurePosixPath(self.name.replace("\\", "/")).parent.name
        return parent or None

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name.replace("\\", "/")).stem


class LayoutError(DomainError, ValueError):
    """A file that fits no layout (or not the one asked for): names the file and the field it lacks."""

    field: str

    def __init__(self, file: str, field: str, message: str) -> None:
        super().__init__(f"{file}: field '{field}': {message}")
        self.file, self.field, self.message = file, field, message

    def detail(self) -> dict:
        return {"message": str(self), "errors": [self.as_dict()]}

    def as_dict(self) -> dict:
        return {"file": self.file, "field": self.field, "message": self.message, "text": str(self)}


class UploadRefused(DomainError):
    """An upload of ideas scored nothing: its refusals by file, record and field, and what was read."""

    def __init__(self, message: str, errors: list[dict], counts: dict) -> None:
        super().__init__(message)
        self.errors, self.counts = errors, counts

    def detail(self) -> dict:
        return {"message": self.message, "errors": self.errors, **self.counts}


def where(file: str, record: str) -> str:
    """file:line for a line, else the file and the record."""
    return f"{file}:{record}" if record.isdigit() else f"{file}: record {record}"


@dataclass
class Refusal:
    """A record that was read and not scored, with the field at fault."""

    file: str
    record: str  # a line number, an array index (and name) or a file's own name
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{where(self.file, self.record)}: field '{self.field}': {self.reason}"

    def as_dict(self) -> dict:
        return asdict(self) | {"text": str(self)}


@dataclass
class ReadIdea:
    idea: IdeaIn
    ratings: dict[str, float] = field(default_factory=dict)  # the generator's own ratings, by judge dimension
    judge: str | None = None  # the judge those ratings are stored as


@dataclass
class ReadResult:
    """Every record read: read = ideas + refused."""

    formats: list[str] = field(default_factory=list)
    files: int = 0
    ideas: list[ReadIdea] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    mappings: dict[str, dict] = field(default_factory=dict)  # per layout: which fields made problem and method
    ignored: list[str] = field(default_factory=list)  # files in a directory that are not JSON
    literature: list[str] = field(default_factory=list)  # a generator's literature files beside its ideas: skipped
    notes: list[str] = field(default_factory=list)  # what was read other than written (a repeated name renamed)
    _seen: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, ideas: list[IdeaIn]) -> "ReadResult":
        """Ideas given as they are (a JSON request)."""
        return cls(ideas=[ReadIdea(i) for i in ideas])

    @property
    def read(self) -> int:
        return len(self.ideas) + len(self.refusals)

    def counts(self) -> dict:
        return {"formats": self.formats, "files": self.files, "read": self.read, "accepted": len(self.ideas),
                "refused": len(self.refusals), "refusals": [r.as_dict() for r in self.refusals],
                "mappings": self.mappings, "ignored_files": self.ignored, "literature_files": self.literature,
                "notes": self.notes}

    def require_ideas(self, skip_invalid: bool) -> None:
        """Refuse the upload (422 with every refusal and the counts) when a record was refused and skip_invalid is
        off, or when it holds no idea."""
        if self.refusals and not skip_invalid:
            raise UploadRefused(f"{len(self.refusals)} of {self.read} ideas refused, nothing scored "
                                "(skip_invalid=true scores the others)", [r.as_dict() for r in self.refusals],
                                self.counts())
        if not self.ideas:
            raise UploadRefused("no ideas in the upload", [], self.counts())

    def refuse(self, file: SourceFile, record: str, field: str, reason: str) -> None:
        self.refusals.append(Refusal(file.name, record, field, reason))

    def add(self, file: SourceFile, record: str, *, idea_id: str, origin: Origin, ratings: dict | None = None,
            judge: str | None = None, max_chars: int | None = None, **text: str | None) -> None:
        """Validate one record into an idea, or refuse it naming the field."""
        for name, value in text.items():
            if max_chars and value and len(value) > max_chars:
                self.refuse(file, record, name, f"{len(value)} characters; the limit is {max_chars} "
                                                "(HINDSIGHT_MAX_TEXT_CHARS)")
                return
        first = self._seen.get(idea_id)
        if first:
            self.refuse(file, record, "id", f"duplicate id {idea_id!r}, first in {first}")
            return
        try:
            idea = IdeaIn(id=idea_id, origin=origin, **text)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "<record>"
            self.refuse(file, record, loc, err["msg"])
            return
        self._seen[idea_id] = where(file.name, record)
        self.ideas.append(ReadIdea(idea, ratings or {}, judge if ratings else None))
