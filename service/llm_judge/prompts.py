"""Every prompt of the LLM judge, versioned. A version is never edited in place: a new wording is a new version,
and the judge's revision also carries a hash of the texts, so an edit that forgets to rename still makes a new
revision (and new calls) instead of mixing two prompts under one name.

Each task is a system turn (the rubric, evaluated once per load by the local backend), a shared user prefix (the
idea, or the two ideas or papers) and one short question per answer, so a backend keeps the prefix and asks every
question on top of it. Answers are one label: a rating "1".."10", "A"/"B", or a decision number "1".."4".
"""

import hashlib
import json
import re
from dataclasses import dataclass, field

from indexing.llm.text import clip, text_of_idea

DIMENSIONS = ("novelty", "feasibility", "impact", "overall")
RATINGS = tuple(str(r) for r in range(1, 11))
CHOICES = ("A", "B")
DECISIONS = {"1": "reject", "2": "poster", "3": "spotlight", "4": "oral"}  # InnoEval's tiers, lowest first
DEFAULT = "paper-v1"

# The idea as the judge reads it: problem, method and a free text clipped at sentence ends (characters). The
# idea's tokens are what an idea costs the local model (measured: about 15 tokens/s on one loaded core, 75 on two
# quiet ones), so a long proposal is read as its problem and the core of its method, as the verifier reads it.
IDEA_LIMITS = (500, 700, 1200)
PAPER_ABSTRACT_CHARS = 800

_RUBRIC = ("You are an expert reviewer of research ideas in machine learning and natural language processing. "
           "You rate one idea at a time on a scale from 1 (lowest) to 10 (highest):\n"
           "- novelty: how different the idea is from existing work;\n"
           "- feasibility: how practical it is to carry out with current methods and resources;\n"
           "- impact: how much it would matter to the field if it worked;\n"
           "- overall: your overall assessment as a reviewer.\n"
           "Answer with the number only.")

_PAIR_SYSTEM = ("You are an expert reviewer of research ideas in machine learning and natural language processing. "
                "You compare two ideas, A and B. Answer with one letter: A or B.")

_POINTS_SYSTEM = ("You are an area chair of a top machine-learning conference. You read a submitted paper's title "
                  "and abstract and predict the program committee's decision:\n"
                  "1 = reject, 2 = accept as poster, 3 = accept as spotlight, 4 = accept as oral.\n"
                  "Answer with the number only.")

_PAIRS_SYSTEM = ("You are an area chair of a top machine-learning conference. You read two submitted papers, A and "
                 "B. Answer with one letter: A or B.")


@dataclass(frozen=True)
class Task:
    """What one kind of question asks: the system turn, the labels an answer may be, and how to read a text."""

    name: str
    system: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class PromptVersion:
    name: str
    summary: str
    rate: dict[str, str]  # dimension -> question
    pair: str  # which of two ideas is more novel
    points: str  # InnoEval: the decision class of a paper
    pairs: str  # InnoEval: the preferred paper of two
    tasks: dict[str, Task] = field(default_factory=lambda: {
        "rate": Task("rate", _RUBRIC, RATINGS), "pair": Task("pair", _PAIR_SYSTEM, CHOICES),
        "points": Task("points", _POINTS_SYSTEM, tuple(DECISIONS)), "pairs": Task("pairs", _PAIRS_SYSTEM, CHOICES)})

    @property
    def sha(self) -> str:
        """A hash of every text of the version: part of the judge's revision."""
        texts = {"rate": self.rate, "pair": self.pair, "points": self.points, "pairs": self.pairs,
                 "systems": {k: t.system for k, t in self.tasks.items()}}
        return hashlib.sha256(json.dumps(texts, sort_keys=True).encode()).hexdigest()[:10]

    def as_dict(self) -> dict:
        return {"name": self.name, "summary": self.summary, "sha": self.sha, "default": self.name == DEFAULT,
                "rate": self.rate, "pair": self.pair, "points": self.points, "pairs": self.pairs,
                "systems": {k: t.system for k, t in self.tasks.items()}}


# The paper's four dimensions on 1-10, asked directly ("Rate ..."): the HindSight paper's judge rubric. The paper
# does not publish its prompt's words; this states its dimensions and scale.
PAPER_V1 = PromptVersion(
    name="paper-v1",
    summary="the paper's rubric: novelty, feasibility, impact and overall on 1-10, asked directly",
    rate={"novelty": "Rate the novelty of this idea from 1 to 10.",
          "feasibility": "Rate the feasibility of this idea from 1 to 10.",
          "impact": "Rate the expected impact of this idea from 1 to 10.",
          "overall": "Rate this idea overall from 1 to 10."},
    pair="Which idea is more novel?",
    points="What is the decision on this paper?",
    pairs="Which paper is stronger?",
)

# Only the wording of what is asked changes, as in novelty-eval's "which idea did reviewers judge novel" against
# "which idea is novel": here the judge is asked what expert reviewers would say.
REVIEWERS_V1 = PromptVersion(
    name="reviewers-v1",
    summary="paper-v1 with each question asked as what expert reviewers would say (wording only)",
    rate={"novelty": "How would expert reviewers rate the novelty of this idea, from 1 to 10?",
          "feasibility": "How would expert reviewers rate the feasibility of this idea, from 1 to 10?",
          "impact": "How would expert reviewers rate the expected impact of this idea, from 1 to 10?",
          "overall": "How would expert reviewers rate this idea overall, from 1 to 10?"},
    pair="Which idea would expert reviewers judge more novel?",
    points="What decision would the program committee reach on this paper?",
    pairs="Which paper would the program committee rank higher?",
)

PROMPTS: dict[str, PromptVersion] = {p.name: p for p in (PAPER_V1, REVIEWERS_V1)}


def get(name: str | None) -> PromptVersion:
    """The named version (the default when None); KeyError names the known ones."""
    try:
        return PROMPTS[name or DEFAULT]
    except KeyError:
        raise KeyError(f"unknown prompt {name!r}; one of {', '.join(PROMPTS)}") from None


def idea_block(problem: str | None, method: str | None, text: str | None) -> str:
    """The idea as the judge reads it (and as its cache hashes it)."""
    return text_of_idea(problem, method, text, limits=IDEA_LIMITS)


def rate_prefix(idea: str) -> str:
    return f"Research idea:\n{idea.strip()}\n\n"


def pair_prefix(first: str, second: str) -> str:
    return f"Idea A:\n{first.strip()}\n\nIdea B:\n{second.strip()}\n\n"


def paper_text(title: str, abstract: str) -> str:
    return f"Title: {' '.join(title.split())}\nAbstract: {clip(abstract or '', PAPER_ABSTRACT_CHARS)}"


def paper_prefix(paper: str) -> str:
    return f"Paper:\n{paper}\n\n"


def papers_prefix(first: str, second: str) -> str:
    return f"Paper A:\n{first}\n\nPaper B:\n{second}\n\n"


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_LETTER = re.compile(r"^(?:idea|paper|answer)?\s*:?\s*\(?([AB])\b", re.IGNORECASE)


def parse(task: Task, text: str | None) -> tuple[str | None, str | None]:
    """(the label a text answer gives, None) or (None, why it cannot be read). A JSON object answer is read by its
    one number or letter field; a broken one is invalid."""
    if text is None or not text.strip():
        return None, "an empty answer"
    said = text.strip().strip("*`\"' ")
    if said.startswith("{"):
        try:
            obj = json.loads(said)
        except json.JSONDecodeError as exc:
            return None, f"malformed JSON answer ({exc.msg}): {text.strip()[:80]!r}"
        values = [v for v in obj.values() if isinstance(v, int | float | str)] if isinstance(obj, dict) else []
        if len(values) != 1:
            return None, f"a JSON answer without one value: {text.strip()[:80]!r}"
        said = str(values[0])
    if task.labels == CHOICES:
        m = _LETTER.match(said)
        return (m.group(1).upper(), None) if m else (None, f"neither A nor B: {text.strip()[:80]!r}")
    m = _NUMBER.search(said)
    if m is None:
        return None, f"no number in the answer: {text.strip()[:80]!r}"
    value = float(m.group())
    low, high = task.labels[0], task.labels[-1]
    if not re.fullmatch(r"-?\d+(?:\.0+)?", m.group()):
        return None, f"{m.group()} is not a whole number {low}-{high}"
    if str(int(value)) not in task.labels:
        return None, f"rating {int(value)} outside {low}-{high}"
    return str(int(value)), None
