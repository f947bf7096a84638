"""The report as Markdown: pipe tables, and the plots as SVG files beside it."""

from service.report.gather import Report
from service.report.parts import Section, Table, run_names
from service.report.sections import sections


def cell(text: str) -> str:
    """Cell text that cannot end its cell or its row."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _table(t: Table) -> list[str]:
    return [f"**{cell(t.caption)}**", "", "| " + " | ".join(cell(h) for h in t.head) + " |",
            "|" + "---|" * len(t.head), *("| " + " | ".join(cell(c) for c in row) + " |" for row in t.rows), ""]


def _section(s: Section, images: dict[str, str]) -> list[str]:
    lines = [f"## {s.title}", ""]
    if (why := s.empty_sentence()) is not None:
        lines += [f"> {why}", ""]
    for text in s.text:
        lines += [text, ""]
    if s.warnings:
        lines += [*(f"- {w}" for w in s.warnings), ""]
    for i, t in enumerate(s.tables):
        lines += _table(t)
        if i == 0:
            lines += [line for name in s.plots if name in images for line in (f"![{name}]({images[name]})", "")]
    return lines


def render_markdown(report: Report, images: dict[str, str]) -> str:
    """The document; `images` maps a plot's name to the file written beside it."""
    runs = run_names(report.provenance["runs"])
    lines = ["# HindSight report", "", f"{runs} · made {report.generated}", ""]
    for s in sections(report):
        lines += _section(s, images)
    return "\n".join(lines).rstrip() + "\n"
