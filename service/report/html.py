"""The report as one HTML file: inline CSS and SVG, no script, and a policy that forbids any request."""

import html
import re

from service.report.gather import Report
from service.report.parts import Section, Table, run_names
from service.report.sections import sections

# the page may load nothing: no stylesheet, script, font or image from anywhere (the plots are inline SVG)
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 0 auto;
       max-width: 1100px; padding: 0 1.2rem 3rem; }
h1 { margin: 1.2rem 0 0.2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
nav a { margin-right: 0.8rem; }
table { border-collapse: collapse; margin: 0.6rem 0 1rem; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding: 0.2rem 0; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; vertical-align: top; overflow-wrap: break-word; }
th { background: #f4f4f4; text-align: left; }
td { max-width: 32rem; }
.why { background: #fff8e1; border-left: 4px solid #f0b400; padding: 0.5rem 0.8rem; }
.warnings li { color: #8a5300; }
.muted { color: #666; }
figure { margin: 0.8rem 0; } figcaption { color: #666; font-size: 12px; }
svg.plot { max-width: 100%; height: auto; }
"""


def breakable(text: str) -> str:
    """Escaped text that may wrap after a / or _ (long idea, run and window ids)."""
    return re.sub(r"([/_])", r"\1<wbr>", html.escape(text))


def _table(t: Table) -> str:
    head = "".join(f"<th>{breakable(h)}</th>" for h in t.head)
    rows = "".join("<tr>" + "".join(f"<td>{breakable(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    return (f'<table id="{t.key}"><caption>{html.escape(t.caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _section(s: Section, figures: dict[str, tuple[str, bytes]]) -> str:
    from service.report.svg import inline

    parts = [f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>']
    if (why := s.empty_sentence()) is not None:
        parts.append(f'<p class="why">{breakable(why)}</p>')
    parts += [f"<p>{breakable(t)}</p>" for t in s.text]
    if s.warnings:
        parts.append('<ul class="warnings">' + "".join(f"<li>{breakable(w)}</li>" for w in s.warnings) + "</ul>")
    for i, t in enumerate(s.tables):
        parts.append(_table(t))
        if i == 0:  # a section's plot follows its first table
            for name in s.plots:
                if name in figures:
                    label, image = figures[name]
                    parts.append(f'<figure id="plot-{name}">{inline(image, name, html.escape(label))}'
                                 f"<figcaption>{html.escape(label)}</figcaption></figure>")
    parts.append("</section>")
    return "".join(parts)


def render_html(report: Report, figures: dict[str, tuple[str, bytes]] | None = None) -> str:
    """The whole page; `figures` as svg.figures draws them (drawn here when not given)."""
    if figures is None:
        from service.report import svg  # matplotlib: only when a report is written

        figures = svg.figures(report)
    body = sections(report)
    runs = run_names(report.provenance["runs"])
    nav = "".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>' for s in body)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>HindSight report: {html.escape(runs)}</title><style>{CSS}</style></head><body>"
            f"<header><h1>HindSight report</h1><p class=\"muted\">{breakable(runs)} · made {report.generated}</p>"
            f"<nav>{nav}</nav></header><main>{''.join(_section(s, figures) for s in body)}</main></body></html>\n")
