"""A report written to disk: one HTML file, or a Markdown file with its plots as SVG files beside it."""

from pathlib import Path

from service.report.gather import Report

SUFFIXES = (".html", ".md")


def write_report(report: Report, out: Path) -> list[Path]:
    """The files written, the report first; ValueError for a name that is neither .html nor .md."""
    suffix = out.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"{out.name} must end in .html or .md")
    from service.report import svg  # matplotlib: only when a report is written

    figures = svg.figures(report)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".html":
        from service.report.html import render_html

        out.write_text(render_html(report, figures), encoding="utf-8")
        return [out]
    from service.report.markdown import render_markdown

    written = [out]
    images = {}
    for name, (_, image) in figures.items():
        path = out.with_name(f"{out.stem}-{name}.svg")
        path.write_bytes(image)
        images[name] = path.name
        written.append(path)
    out.write_text(render_markdown(report, images), encoding="utf-8")
    return written
