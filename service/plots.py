"""Quadrant scatter and per-system score distributions, drawn with matplotlib's Agg backend (PNG or SVG)."""

import io

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from service.analyses.quadrants import QUADRANTS  # noqa: E402
from service.runs import matcher_label  # noqa: E402

FORMATS = {"png": "image/png", "svg": "image/svg+xml"}
# where each quadrant's label sits, in axes coordinates
CORNERS = {"true_positive": (0.98, 0.98, "right", "top"), "hidden_gem": (0.98, 0.02, "right", "bottom"),
           "overhyped": (0.02, 0.98, "left", "top"), "true_negative": (0.02, 0.02, "left", "bottom")}


def render(fig: Figure, fmt: str) -> bytes:
    if fmt not in FORMATS:
        raise ValueError(f"format: expected png or svg, got {fmt!r}")
    buf = io.BytesIO()
    # no timestamps in the file, so the same answer draws the same bytes
    fig.savefig(buf, format=fmt, dpi=110, bbox_inches="tight", metadata={"Date": None} if fmt == "svg" else None)
    return buf.getvalue()


def _matchers_line(matchers: list[str] | None) -> str:
    return "\n" + "; ".join(matchers) if matchers else ""


def group_colours(groups: list[str]) -> dict[str, tuple]:
    palette = matplotlib.colormaps["tab10"]
    return {g: palette(i % 10) for i, g in enumerate(groups)}


def _jitter(values: np.ndarray, seed: int = 0) -> tuple[np.ndarray, float]:
    """Spread judge scores given on a coarse grid (whole or half points) so equal points stay visible."""
    unique = np.unique(values)
    if len(unique) < 2 or not np.allclose(unique * 2, np.round(unique * 2)):
        return values, 0.0
    width = 0.15 * float(np.min(np.diff(unique)))
    return values + np.random.default_rng(seed).uniform(-width, width, size=len(values)), width


def quadrant_plot(frame: pd.DataFrame, answer: dict, *, fmt: str = "png", matchers: list[str] | None = None) -> bytes:
    """HindSight score (x) vs the judge score (y), one colour per group, the cut lines, labels with shares."""
    points = frame[frame["quadrant"].notna()]
    groups = sorted(points["group"].unique())
    colours = group_colours(groups)
    fig = Figure(figsize=(8.4, 6.2))
    ax = fig.add_subplot()
    y, width = _jitter(points["judge_value"].to_numpy(dtype=float))
    for g in groups:
        mask = (points["group"] == g).to_numpy()
        ax.scatter(points["score"].to_numpy()[mask], y[mask], s=28, alpha=0.7, color=colours[g], label=g,
                   edgecolors="white", linewidths=0.5)
    cuts = answer["cuts"]
    if cuts["hindsight"]["kind"] == "matched":
        # unmatched ideas sit at 0: the line runs between them and the smallest matched score
        positive = points.loc[points["matched"] & (points["score"] > 0), "score"]
        x_cut = float(positive.min()) / 2 if len(positive) else 0.0
        x_rule = "dashed: matched | unmatched"
    else:
        x_cut = cuts["hindsight"]["value"]
        x_rule = f"dashed: {cuts['hindsight']['kind']} {x_cut:.3g}"
    y_cut = cuts["judge"]["value"]
    ax.axvline(x_cut, color="0.35", linestyle="--", linewidth=1)
    ax.axhline(y_cut, color="0.35", linestyle="--", linewidth=1)
    shares = {c["group"]: c for c in answer["counts"]}
    for key, (label, _, _) in QUADRANTS.items():
        lines = [label]
        for g in (groups if len(groups) <= 4 else []) + ["all"]:
            c = shares[g][key]
            pct = "–" if c["share"] is None else f"{100 * c['share']:.0f}%"
            lines.append(f"{g}: {pct} ({c['count']})")
        x, yy, ha, va = CORNERS[key]
        ax.text(x, yy, "\n".join(lines), transform=ax.transAxes, ha=ha, va=va, fontsize=8,
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "alpha": 0.8, "edgecolor": "0.8"})
    ax.set_xlabel(f"HindSight score (max impact of matched future papers); {x_rule}")
    ax.set_ylabel(f"{answer['judge']} · {answer['dimension']}; dashed: {cuts['judge']['kind']} {y_cut:.3g}")
    # headroom above and below so the corner labels do not cover points
    lo, hi = float(np.nanmin(y)), float(np.nanmax(y))
    pad = max(hi - lo, 1e-9)
    ax.set_ylim(lo - 0.45 * pad, hi + 0.45 * pad)
    right = max(float(points["score"].max()), x_cut) if len(points) else 1.0
    ax.set_xlim(-0.04 * max(right, 0.1), right * 1.45 + 0.02)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=min(len(groups), 5), fontsize=8, frameon=False)
    note = f"n = {len(points)} judged ideas"
    if width:
        note += f"; judge scores jittered by up to ±{width:.2g} for visibility"
    ax.set_title(f"HindSight vs LLM judge — {note}{_matchers_line(matchers)}", fontsize=10)
    ax.grid(alpha=0.2)
    return render(fig, fmt)


def distribution_plot(ideas: pd.DataFrame, *, fmt: str = "png", matchers: list[str] | None = None) -> bytes:
    """Per-group HindSight score distributions: box plot with the individual scores, mean and match rate."""
    groups = sorted(ideas["group"].unique())
    colours = group_colours(groups)
    fig = Figure(figsize=(max(4.5, 1.8 * len(groups) + 2), 4.6))
    ax = fig.add_subplot()
    data = [ideas.loc[ideas["group"] == g, "score"].to_numpy(dtype=float) for g in groups]
    if groups:
        ax.boxplot(data, tick_labels=groups, widths=0.5, showfliers=False, medianprops={"color": "0.2"})
    rng = np.random.default_rng(0)
    for i, (g, values) in enumerate(zip(groups, data), start=1):
        ax.scatter(i + rng.uniform(-0.15, 0.15, len(values)), values, s=14, alpha=0.6, color=colours[g])
        ax.scatter([i], [values.mean()], marker="D", s=40, color="black", zorder=3)
        matched = ideas.loc[ideas["group"] == g, "matched"].mean()
        ax.annotate(f"mean {values.mean():.3f}\nmatched {100 * matched:.0f}%", (i, 1.0),
                    xycoords=("data", "axes fraction"), xytext=(0, -4), textcoords="offset points",
                    ha="center", va="top", fontsize=8)
    ax.set_ylabel("HindSight score")
    ax.set_ylim(-0.03, max([1e-9] + [float(v.max()) for v in data if len(v)]) * 1.35 + 0.03)
    ax.set_title(f"HindSight score per system (◆ = mean){_matchers_line(matchers)}", fontsize=9)
    ax.grid(axis="y", alpha=0.2)
    return render(fig, fmt)


def cutoff_plot(answer: dict, *, fmt: str = "png") -> bytes:
    """Cutoff sensitivity: mean score (95% CI) and match rate per group at each cutoff; hollow = leak risk."""
    entries = answer["cutoffs"]
    labels = [e["cutoff"] for e in entries]
    groups = sorted({g["group"] for e in entries for g in e["groups"]})
    colours = group_colours(groups)
    fig = Figure(figsize=(max(7.0, 1.4 * len(labels) + 4), 4.4))
    ax_score, ax_rate = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    x = np.arange(len(labels), dtype=float)
    offsets = np.linspace(-0.08, 0.08, len(groups)) if len(groups) > 1 else [0.0]
    for off, g in zip(offsets, groups):
        rows = [next((r for r in e["groups"] if r["group"] == g), None) for e in entries]
        mean = np.array([np.nan if r is None or r["mean_score"] is None else r["mean_score"] for r in rows])
        low = np.array([np.nan if r is None or not r["ci"] else r["ci"][0] for r in rows])
        high = np.array([np.nan if r is None or not r["ci"] else r["ci"][1] for r in rows])
        rate = np.array([np.nan if r is None or r["match_rate"] is None else r["match_rate"] for r in rows])
        leak = np.array([bool(r and r["leak_risk"]) for r in rows])
        colour = colours[g]
        ax_score.errorbar(x + off, mean, yerr=[mean - low, high - mean], color=colour, capsize=3, linewidth=1.5,
                          marker=None, label=g)
        ax_rate.plot(x + off, 100 * rate, color=colour, linewidth=1.5, label=g)
        for ax, y in ((ax_score, mean), (ax_rate, 100 * rate)):
            ax.scatter((x + off)[~leak], y[~leak], color=colour, s=36, zorder=3)
            ax.scatter((x + off)[leak], y[leak], facecolors="white", edgecolors=colour, s=36, zorder=3,
                       linewidths=1.5)
    for ax, title in ((ax_score, "mean HindSight score (95% CI)"), (ax_rate, "match rate (%)")):
        ax.set_xticks(x, [f"{c}\n{e['papers']} papers" for c, e in zip(labels, entries)], fontsize=8)
        ax.set_xlabel(f"cutoff (window ends {answer['until']})")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.2)
    ax_rate.set_ylim(-3, 103)
    ax_score.legend(fontsize=8, frameon=False)
    rule = matcher_label(answer.get("matcher"), answer.get("matcher_version"),
                         answer.get("thresholds") or {"theta": answer.get("theta")})
    title = f"Cutoff sensitivity · index {answer['index_version']} · {answer['model']} · {rule}"
    if any(g["leak_risk"] for e in entries for g in e["groups"]):
        title += "\nhollow markers: cutoff earlier than the system's declared knowledge cutoff (leak risk)"
    fig.suptitle(title, fontsize=10)
    fig.subplots_adjust(top=0.82, wspace=0.25)
    return render(fig, fmt)
