// Prior art on the dashboard: an idea's papers on both sides of the cutoff on one timeline (the cutoff and the
// knowledge cutoff marked), its look-back list, and the four classes per system. Uses el, $, fmt, pct, CLASS_NAMES
// from dashboard.js.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const CLASS_TEXT = {
  anticipated: "realised after the cutoff, not before",
  recalled: "realised both before and after",
  already_published: "realised before the cutoff, not after",
  unrealised: "realised on neither side",
  unknown: "the index held no paper before the cutoff",
};

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== "") node.append(c);
  return node;
}

const day = (s) => (s ? Date.parse(`${String(s).slice(0, 10)}T00:00:00Z`) : null);

function decisionOf(m) {
  if (m.realised ?? m.above_threshold) return "realised";
  return m.direction ? "direction" : "none";
}

function timelinePapers(d) {
  const after = (d.matches || []).map((m) => ({ ...m, side: "after", date: m.publication_date || `${m.year}-07-01` }));
  const before = ((d.prior_art && d.prior_art.matches) || []).map((m, i) => ({ ...m, rank: i + 1, side: "before",
    date: m.publication_date }));
  return after.concat(before).filter((p) => day(p.date) !== null);
}

// one horizontal axis of dates: the look-back window shaded, the forward window shaded, every paper a dot stacked by
// rank (its decision's colour; hollow before the cutoff), the cutoff and the knowledge cutoff as vertical lines
function priorArtTimeline(d) {
  const s = d.score;
  if (!s) return "";
  const papers = timelinePapers(d);
  const lb = d.lookback_window;
  const marks = { cutoff: day(s.cutoff), end: day(s.window_end), lbStart: lb && day(lb.start || lb.requested_start),
    knowledge: day(d.knowledge_cutoff) };
  const times = papers.map((p) => day(p.date)).concat(Object.values(marks).filter((t) => t !== null));
  let lo = Math.min(...times);
  let hi = Math.max(...times);
  if (hi - lo < 864e5 * 60) { lo -= 864e5 * 30; hi += 864e5 * 30; }
  const W = 820; const H = 190; const L = 30; const R = 20; const top = 28; const bottom = 36;
  const x = (t) => L + ((t - lo) / (hi - lo)) * (W - L - R);
  const maxRank = Math.max(1, ...papers.map((p) => p.rank || 1));
  const y = (rank) => top + ((rank - 1) / Math.max(1, maxRank - 1)) * (H - top - bottom);
  const parts = [];
  if (lb && lb.start) {
    parts.push(svg("rect", { x: x(day(lb.start)), y: top - 8, width: Math.max(1, x(marks.cutoff) - x(day(lb.start))),
      height: H - top - bottom + 16, class: "tl-window tl-before" }, svg("title", {}, `look-back window ${lb.start} … ${lb.end}`)));
  }
  parts.push(svg("rect", { x: x(marks.cutoff), y: top - 8, width: Math.max(1, x(marks.end) - x(marks.cutoff)),
    height: H - top - bottom + 16, class: "tl-window tl-after" }, svg("title", {}, `forward window ${s.cutoff} … ${s.window_end}`)));
  // years along the axis
  const axisY = H - bottom + 12;
  parts.push(svg("line", { x1: L, x2: W - R, y1: axisY, y2: axisY, class: "tl-axis" }));
  for (let yr = new Date(lo).getUTCFullYear(); yr <= new Date(hi).getUTCFullYear() + 1; yr++) {
    const t = Date.UTC(yr, 0, 1);
    if (t < lo || t > hi) continue;
    parts.push(svg("line", { x1: x(t), x2: x(t), y1: axisY - 3, y2: axisY + 3, class: "tl-axis" }),
      svg("text", { x: x(t), y: axisY + 15, class: "tl-year" }, String(yr)));
  }
  for (const p of papers) {
    const dec = decisionOf(p);
    parts.push(svg("circle", { cx: x(day(p.date)), cy: y(p.rank || 1), r: dec === "none" ? 3.5 : 5.5,
      class: `tl-paper tl-${dec} tl-side-${p.side}`, "data-side": p.side, "data-paper": p.paper_id },
    svg("title", {}, `${p.side === "before" ? "before the cutoff" : "after the cutoff"} · #${p.rank} · ${p.date} · ${dec}` +
      `${p.period === "after_knowledge_cutoff" ? " · published after the knowledge cutoff" : ""}\n${p.title}`)));
  }
  // the cutoff's label to the right of its line, the knowledge cutoff's to the left (below it when they coincide)
  const line = (t, cls, label, anchorY, left) => [
    svg("line", { x1: x(t), x2: x(t), y1: 12, y2: H - bottom + 6, class: cls }),
    svg("text", { x: left ? x(t) - 4 : x(t) + 4, y: anchorY, class: `${cls}-label`, "text-anchor": left ? "end" : "start" },
      label)];
  parts.push(...line(marks.cutoff, "tl-cutoff", `cutoff ${s.cutoff}`, 12, false));
  if (marks.knowledge !== null) {
    const same = marks.knowledge === marks.cutoff;
    parts.push(...line(marks.knowledge, "tl-knowledge", `knowledge cutoff ${d.knowledge_cutoff}`, same ? 24 : 12, !same));
  }
  return el("figure", { id: "idea-timeline" },
    svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img",
      "aria-label": "papers before and after the cutoff on one timeline" }, parts),
    el("figcaption", { class: "muted" },
      "Every retrieved paper by publication date, stacked by rank: filled after the cutoff, hollow before it (prior art); ",
      el("span", { class: "tl-key tl-realised" }, "realised"), " ", el("span", { class: "tl-key tl-direction" }, "direction"),
      " ", el("span", { class: "tl-key tl-none" }, "neither"),
      ". Solid line: the scoring cutoff; dashed: the system's knowledge cutoff (prior art before it is what the generator could have read)."));
}

function priorArtSection(d) {
  const pa = d.prior_art;
  if (!d.score) return "";
  if (!pa) return el("p", { class: "muted", id: "idea-prior-art" }, "Scored without prior art: no look-back side.");
  const lb = d.lookback_window || {};
  const flag = (v) => el("td", { class: v ? "yes" : "" }, v ? "yes" : "no");
  const rows = (pa.matches || []).map((m, i) => el("tr", { "data-period": m.period || "" },
    el("td", {}, String(i + 1)), el("td", { class: "title" }, m.title), el("td", {}, m.venue || "–"),
    el("td", {}, m.publication_date),
    el("td", {}, m.period === "after_knowledge_cutoff" ? "after the knowledge cutoff"
      : m.period === "before_knowledge_cutoff" ? "before it" : "–"),
    el("td", { class: "num" }, fmt(m.similarity)), el("td", { class: "num" }, fmt(m.p_realised, 3)), flag(m.realised),
    el("td", { class: "num" }, fmt(m.p_direction, 3)), flag(m.direction)));
  return el("div", { id: "idea-prior-art", "data-class": pa.class_realised },
    el("h3", {}, "Before the cutoff: prior art"),
    el("p", {}, el("b", {}, "Class: "), el("span", { class: `pa-class pa-${pa.class_realised}`, id: "idea-class" }, pa.class_realised),
      ` (${CLASS_TEXT[pa.class_realised] || ""}); at direction level `,
      el("span", { class: `pa-class pa-${pa.class_direction}` }, pa.class_direction), ". ",
      el("span", { class: "muted" }, lb.status === "unknown" ? "The index held no paper in the look-back window."
        : `Look-back window ${lb.start} … ${lb.end} (${lb.lookback_days} days${lb.clipped ? ", clipped to the index" : ""}, ${lb.papers} papers)` +
        (d.knowledge_cutoff ? `; knowledge cutoff ${d.knowledge_cutoff}` : "; no knowledge cutoff declared") + ".")),
    rows.length ? el("table", { id: "prior-art-table" },
      el("thead", {}, el("tr", {}, ["#", "paper", "venue", "published", "against the knowledge cutoff", "similarity",
        "p realised", "realised", "p direction", "direction"].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows)) : "");
}

// the systems panel: per system the four classes (at the Decision control's level) with their counts and intervals
function renderPriorArtSystems(answer) {
  const box = $("prior-art-systems");
  if (!box) return;
  const level = $("level").value === "direction" ? "direction" : "realised";
  const groups = answer.groups.filter((g) => g.prior_art);
  if (!groups.length) {
    box.replaceChildren(el("p", { class: "muted" }, "No run of the selection was scored with prior art."));
    return;
  }
  const cell = (c) => (c ? el("td", { class: "num", "data-class": c.name },
    `${pct(c.rate)} (${c.n})`, c.ci ? el("span", { class: "muted" }, ` [${pct(c.ci[0])}, ${pct(c.ci[1])}]`) : "") : el("td", {}, "–"));
  const rows = groups.map((g) => {
    const p = (g.prior_art.rates || {})[level] || {};
    return el("tr", { "data-group": g.group },
      el("td", {}, swatch(g.group), g.group), el("td", { class: "num" }, String(g.prior_art.known ?? "–")),
      ...CLASS_NAMES.map((name) => cell(p[name] ? { name, ...p[name] } : null)),
      el("td", { class: "num" }, String(g.prior_art.unknown ?? 0)),
      el("td", { class: "num", "data-anticipation": "" }, fmt(g.prior_art.anticipation_score),
        g.prior_art.anticipation_ci ? el("span", { class: "muted" },
          ` [${fmt(g.prior_art.anticipation_ci[0])}, ${fmt(g.prior_art.anticipation_ci[1])}]`) : ""));
  });
  box.replaceChildren(
    el("h3", {}, `Prior art: the four classes (${level} level)`),
    el("table", { id: "prior-art-classes" },
      el("thead", {}, el("tr", {}, [["system"], ["ideas", "num"], ...CLASS_NAMES.map((n) => [n.replace("_", " "), "num"]),
        ["unknown", "num"], ["anticipation score", "num"]].map(([h, cls]) => el("th", { class: cls || "", title: CLASS_TEXT[h.replace(" ", "_")] || "" }, h)))),
      el("tbody", {}, rows)),
    el("p", { class: "muted" }, "anticipated: realised after the cutoff, not before; recalled: both; already published: " +
      "before only; unrealised: neither. Rates over the ideas whose look-back side is known, with 95% intervals; " +
      "unknown: the index held nothing before the cutoff. The anticipation score is the HindSight score of anticipated ideas, 0 for the others."));
}
