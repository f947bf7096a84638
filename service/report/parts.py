"""The report's parts as both renderers lay them out (tables of cell text, sections), and how figures read."""

from dataclasses import dataclass, field

from service.prior_art.classes import CLASSES

CLASS_NAMES = {c: c.replace("_", " ") for c in CLASSES}  # prior-art classes as tables head them


@dataclass
class Table:
    """A table: its key (the HTML id), caption, header and rows of cell text."""

    key: str
    caption: str
    head: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    """A section: its key (the HTML id and the SVG file's name), title, sentences, tables and plots, or why it is
    empty."""

    key: str
    title: str
    text: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    why: str | None = None

    def empty_sentence(self) -> str | None:
        """The sentence a renderer shows first: why the section is empty, or None when it shows something."""
        if self.why is None and (self.text or self.tables):
            return None
        return self.why or "Nothing to show for this selection."


def run_names(runs: list[dict]) -> str:
    """The reported runs as the report's title line names them."""
    return ", ".join(f"{r['system']}/{r['label']}" for r in runs) or "no runs"


def fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def pval(p: float | None) -> str:
    return "–" if p is None else "< 0.001" if p < 0.001 else f"{p:.3f}"


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def with_ci(value: float | None, ci: list[float] | None, digits: int = 3) -> str:
    """'0.123 [0.100, 0.150]', as the command line prints a mean and its interval."""
    return f"{fmt(value, digits)} [{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]" if ci else f"{fmt(value, digits)} [–]"


def rate_ci(r: dict) -> str:
    """A class rate with its interval in percent: '25% [5-70]'."""
    if r["rate"] is None:
        return "–"
    return pct(r["rate"]) + (f" [{100 * r['ci'][0]:.0f}-{100 * r['ci'][1]:.0f}]" if r["ci"] else "")


def warnings(answer: dict | None) -> list[str]:
    """The messages of an answer's warnings."""
    return [w["message"] for w in (answer or {}).get("warnings", [])]
