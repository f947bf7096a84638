"""The report's plots as SVG text (matplotlib's SVG backend, text kept as text), ready to inline in HTML or to write
beside a Markdown file."""

import re
from collections.abc import Callable
from typing import Any

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from service import plots  # noqa: E402
from service.prior_art.classes import CLASSES  # noqa: E402
from service.report.gather import Report  # noqa: E402
from service.report.labels import MEASURES  # noqa: E402

# text as <text> (searchable, no glyph paths) and ids that do not change between runs of the same report
RC: dict[Any, Any] = {"svg.fonttype": "none", "svg.hashsalt": "hindsight-report"}
CLASS_COLOURS = {"anticipated": "#2ca02c", "recalled": "#1f77b4", "already_published": "#ff7f0e",
                 "unrealised": "#c7c7c7"}


def inline(image: bytes, name: str, label: str) -> str:
    """An SVG file as an element of an HTML page: no prolog or metadata, ids prefixed by `name` so that several plots
    in one page never share one, scaled to the page's width."""
    text = image.decode("utf-8")
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{name}-{m[1]}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{name}-{m[1]})", text)
    text = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{name}-{m[1]}"', text)
    return text.replace("<svg ", f'<svg class="plot" role="img" aria-label="{label}" ', 1)


def systems_plot(systems: dict) -> bytes:
    """Each group's mean HindSight score with its bootstrap interval, and its match rate."""
    groups = systems["groups"]
    names = [g["group"] for g in groups]
    colours = plots.group_colours(names)
    fig = Figure(figsize=(8.0, 0.55 * len(groups) + 1.6))
    ax = fig.add_subplot()
    y = np.arange(len(groups))[::-1]
    for yy, g in zip(y, groups):
        mean = g["mean_score"] if g["mean_score"] is not None else np.nan
        lo, hi = (g["ci"] or [mean, mean])
        ax.errorbar([mean], [yy], xerr=[[mean - lo], [hi - mean]], fmt="o", color=colours[g["group"]], capsize=4)
        ax.annotate(f"{mean:.3f} [{lo:.3f}, {hi:.3f}] · matched {100 * (g['match_rate'] or 0):.0f}%", (hi, yy),
                    xytext=(6, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(y, names, fontsize=8)
    ax.set_ylim(-0.7, len(groups) - 0.3)
    right = max([g["ci"][1] for g in groups if g["ci"]] + [g["mean_score"] or 0 for g in groups] + [0.05])
    ax.set_xlim(-0.02, right * 1.9 + 0.02)
    level = systems["selection"]["level"]
    b = systems["bootstrap"]
    ax.set_xlabel(f"mean HindSight score ({level}), {100 * b['confidence_level']:g}% {b['method']} bootstrap interval")
    ax.grid(axis="x", alpha=0.2)
    return plots.render(fig, "svg")


def prior_art_plot(systems: dict) -> bytes:
    """Each group's prior-art classes at the selection's level, as shares of its ideas of known class."""
    level = systems["prior_art"]["level"]
    groups = [g for g in systems["groups"] if g.get("prior_art")]
    fig = Figure(figsize=(8.0, 0.55 * len(groups) + 1.8))
    ax = fig.add_subplot()
    y = np.arange(len(groups))[::-1]
    left = np.zeros(len(groups))
    for cls in CLASSES:
        share = np.array([g["prior_art"]["rates"][level][cls]["rate"] or 0.0 for g in groups])
        ax.barh(y, share, left=left, color=CLASS_COLOURS[cls], label=cls.replace("_", " "), height=0.6)
        for yy, x0, s in zip(y, left, share):
            if s >= 0.08:
                ax.text(x0 + s / 2, yy, f"{100 * s:.0f}%", ha="center", va="center", fontsize=8)
        left += share
    ax.set_yticks(y, [g["group"] for g in groups], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"share of the ideas of known class ({level} level)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=4, fontsize=8, frameon=False)
    return plots.render(fig, "svg")


def labels_plot(labels: dict) -> bytes:
    """Per group and measure: the matcher's figure (a cross), the labels alone and PPI++ with their intervals."""
    groups = labels["groups"]
    fig = Figure(figsize=(9.0, 0.5 * len(groups) + 2.0))
    axes = [fig.add_subplot(1, len(MEASURES), i + 1) for i in range(len(MEASURES))]
    y = np.arange(len(groups))[::-1]
    for ax, (metric, title) in zip(axes, MEASURES.items()):
        for yy, g in zip(y, groups):
            e = g[metric]
            for offset, key, colour in ((0.15, "labels_only", "#1f77b4"), (-0.15, "ppi", "#d62728")):
                est = e[key]
                if est["value"] is not None and est["ci"]:
                    ax.errorbar([est["value"]], [yy + offset], xerr=[[est["value"] - est["ci"][0]],
                                                                     [est["ci"][1] - est["value"]]],
                                fmt="o", color=colour, capsize=3, markersize=4,
                                label=("labels alone" if key == "labels_only" else "PPI++") if yy == y[0] else None)
            if e["matcher"] is not None:
                ax.scatter([e["matcher"]], [yy], marker="x", color="black", zorder=3,
                           label="matcher" if yy == y[0] else None)
        ax.set_title(title, fontsize=9)
        ax.set_ylim(-0.7, len(groups) - 0.3)
        ax.set_yticks(y, [g["group"] for g in groups] if ax is axes[0] else [], fontsize=8)
        ax.grid(axis="x", alpha=0.2)
    axes[0].legend(loc="upper center", bbox_to_anchor=(1.7, -0.18), ncol=3, fontsize=8, frameon=False)
    return plots.render(fig, "svg")


def figures(report: Report) -> dict[str, tuple[str, bytes]]:
    """name -> (what it shows, SVG bytes) for each plot the report has data for."""
    drawn: dict[str, tuple[str, Callable[[], bytes]]] = {}
    systems, matchers = report.systems, report.provenance["matchers"]
    if systems and systems["groups"]:
        drawn["systems"] = ("mean HindSight score per group with its interval", lambda: systems_plot(systems))
        if systems.get("prior_art"):
            drawn["prior-art"] = ("prior-art classes per group", lambda: prior_art_plot(systems))
    if report.ideas is not None and not report.ideas.empty:
        ideas = report.ideas
        drawn["distributions"] = ("HindSight score distribution per group",
                                  lambda: plots.distribution_plot(ideas, fmt="svg", matchers=matchers))
    if report.quadrant_frame is not None and report.quadrants is not None:
        frame, answer = report.quadrant_frame, report.quadrants
        drawn["quadrants"] = ("HindSight score against the judge's score",
                              lambda: plots.quadrant_plot(frame, answer, fmt="svg", matchers=matchers))
    if report.labels and report.labels["groups"]:
        labels = report.labels
        drawn["labels"] = ("the three estimates per group", lambda: labels_plot(labels))
    with matplotlib.rc_context(RC):
        return {name: (label, draw()) for name, (label, draw) in drawn.items()}
