// HindSight dashboard: a small page over the JSON API (/v1/runs, /v1/judge-scores, /v1/analysis/*).
"use strict";

const $ = (id) => document.getElementById(id);
const QUADRANT_ORDER = ["true_positive", "hidden_gem", "overhyped", "true_negative"];
const JUDGE_DIMENSIONS = ["novelty", "feasibility", "impact", "overall", "interestingness", "novel"];
// the prior-art classes (known ones), in the order the systems panel and the estimates list them
const CLASS_NAMES = ["anticipated", "recalled", "already_published", "unrealised"];
const state = { pages: {}, colours: {}, judges: [] };
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) node.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return node;
}

const fmt = (x, digits = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(0)}%`);
const pval = (p) => (p === null || p === undefined ? "–" : p < 0.001 ? "< 0.001" : p.toFixed(3));

// the query parameter an answer's detail names first ("pool_windows: the selection mixes ..."), if any
const fieldOf = (detail) => (typeof detail === "string" ? (detail.match(/^([a-z_]+): /) || [])[1] || null : null);

// a refusal as a sentence for the page: what is wrong and what to do in this page's words, never a status code or a
// command-line option
function plainError(status, detail) {
  const field = fieldOf(detail);
  if (field === "pool_windows") {
    return "The selected runs were scored in different windows, which measure different futures: choose "
      + "\u201csystem @ window\u201d under Group by, or tick \u201cpool windows\u201d to pool them anyway.";
  }
  if (status >= 500 && status !== 503) return "The server could not answer this request; its log says why.";
  let text = typeof detail === "string" ? detail
    : Array.isArray(detail) ? detail.map((d) => `${(d.loc || []).slice(-1)[0] ?? "request"} ${d.msg}`).join("; ")
      : detail && typeof detail.message === "string" ? detail.message : "";
  text = text.replace(/^[a-z_]+: /, "")
    .replace(/\s*\([^()]*--[a-z][^()]*\)/g, "") // an aside naming a command-line option
    .replace(/--([a-z][a-z-]*)/g, (_, name) => name.replace(/-/g, " "))
    .replace(/\b([45]\d\d)\b:/g, "$1");
  text = text.trim() || "The server refused this request.";
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const lower = (text) => text.charAt(0).toLowerCase() + text.slice(1);

class ApiError extends Error {
  constructor(status, detail) {
    super(plainError(status, detail));
    this.status = status;
    this.field = fieldOf(detail);
  }
}

async function getJSON(url) {
  const res = await fetch(url);
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, body.detail ?? body);
  return body;
}

// an id that may wrap after its / and _ (idea ids such as topic/idea_name), as text and <wbr> nodes
function wrapId(text) {
  return String(text ?? "").split(/(?<=[/_])/).flatMap((part, i) => (i ? [document.createElement("wbr"), part] : [part]));
}

// a plot, or when it cannot be drawn a sentence in its place, never a broken image (an img without src is hidden)
function showPlot(img, url, sentence) {
  const empty = $(`${img.id}-empty`);
  img.onerror = () => { img.onerror = null; img.hidden = true; img.removeAttribute("src"); empty.hidden = false; empty.textContent = sentence; };
  empty.hidden = true;
  img.hidden = false;
  img.src = url;
}

function noPlot(img, sentence) {
  const empty = $(`${img.id}-empty`);
  img.onerror = null;
  img.removeAttribute("src");
  img.hidden = true;
  empty.hidden = !sentence;
  empty.textContent = sentence || "";
}

function showError(message) {
  const box = $("error");
  box.hidden = !message;
  box.textContent = message || "";
}

function showNotice(message) {
  const box = $("notice");
  box.hidden = !message;
  box.textContent = message || "";
}

function selectionParams() {
  const p = new URLSearchParams();
  document.querySelectorAll("#runs input:checked").forEach((box) => p.append("runs", box.value));
  p.set("group_by", $("group_by").value);
  if ($("pool_windows").checked) p.set("pool_windows", "true");
  p.set("level", $("level").value);
  return p;
}

function judgeParams() {
  const p = selectionParams();
  if ($("judge").value) p.set("judge", $("judge").value);
  p.set("dimension", $("dimension").value);
  const hs = $("hs_kind").value;
  p.set("hindsight_cut", hs === "value" ? $("hs_value").value || "0" : hs);
  const jc = $("judge_kind").value;
  p.set("judge_cut", jc === "value" ? $("judge_value").value || "0" : jc);
  return p;
}

function reportParams() {
  // the report of the ticked runs with this selection, the chosen judge and dimension, and the estimates from labels
  const p = selectionParams();
  if ($("judge").value) p.set("judge", $("judge").value);
  p.set("dimension", $("dimension").value);
  p.set("labels", "true");
  return p;
}

function table(target, head, rows) {
  const t = $(target);
  t.replaceChildren(
    el("thead", {}, el("tr", {}, head.map(([label, cls]) => el("th", { class: cls || "" }, label)))),
    el("tbody", {}, rows),
  );
}

function swatch(group) {
  return el("span", { class: "swatch", style: `background:${state.colours[group] || "#999"}` });
}

function renderSystems(answer) {
  const judges = answer.judges;
  answer.groups.forEach((g, i) => { state.colours[g.group] = PALETTE[i % PALETTE.length]; });
  const dim = $("dimension").value;
  const head = [["system"], ["ideas", "num"], ["mean HindSight [95% CI]", "num"], ["match rate", "num"]]
    .concat(judges.map((j) => [`${j} · ${dim}`, "num"]));
  table("systems-table", head, answer.groups.map((g) => el("tr", {},
    el("td", {}, swatch(g.group), g.group),
    el("td", { class: "num" }, String(g.ideas)),
    el("td", { class: "num" }, `${fmt(g.mean_score)} [${g.ci ? `${fmt(g.ci[0])}, ${fmt(g.ci[1])}` : "–"}]`),
    el("td", { class: "num" }, `${pct(g.match_rate)} (${g.matched})`),
    judges.map((j) => el("td", { class: "num" }, fmt(g.judges[j][dim].mean, 2))),
  )));
  const shown = answer.comparisons.filter((c) => c.metric === "hindsight" || c.dimension === dim);
  table("comparison-table",
    [["a vs b"], ["measure"], ["mean a", "num"], ["mean b", "num"], ["Mann-Whitney p", "num"], ["Welch t p", "num"], ["Cliff's δ", "num"]],
    shown.map((c) => el("tr", {},
      el("td", {}, `${c.a} vs ${c.b}`),
      el("td", {}, c.metric === "hindsight" ? "HindSight score" : `${c.judge} · ${c.dimension}`),
      el("td", { class: "num" }, fmt(c.mean_a)), el("td", { class: "num" }, fmt(c.mean_b)),
      el("td", { class: "num" + (c.mannwhitney_p < 0.05 ? " sig" : "") }, pval(c.mannwhitney_p)),
      el("td", { class: "num" + (c.welch_p < 0.05 ? " sig" : "") }, pval(c.welch_p)),
      el("td", { class: "num" }, fmt(c.effect_size.value, 2)),
    )));
  if (!shown.length) table("comparison-table", [["Select at least two systems to compare them."]], []);
  renderPriorArtSystems(answer);
}

function renderCorrelations(answer) {
  const dim = $("dimension").value;
  const rows = answer.rows.filter((r) => r.dimension === dim || r.scope === "all");
  table("corr-table", [["scope"], ["judge · dimension"], ["n", "num"], ["ρ", "num"], ["p", "num"]],
    rows.map((r) => el("tr", {},
      el("td", {}, r.scope === "all" ? "all" : [swatch(r.scope), r.scope]),
      el("td", {}, `${r.judge} · ${r.dimension}`),
      el("td", { class: "num" }, String(r.n)),
      el("td", { class: "num" }, fmt(r.rho, 2)),
      el("td", { class: "num" + (r.p !== null && r.p < 0.05 ? " sig" : "") }, pval(r.p)),
    )));
  if (!rows.length) table("corr-table", [["No judge scores for this selection yet."]], []);
}

function renderCounts(answer) {
  const head = [["group"], ["judged", "num"]].concat(QUADRANT_ORDER.map((q) => [answer.quadrants[q], "num"]));
  table("counts-table", head, answer.counts.map((c) => el("tr", {},
    el("td", {}, c.group === "all" ? "all" : [swatch(c.group), c.group]),
    el("td", { class: "num", title: `${c.unjudged} without a judge score` }, String(c.judged)),
    QUADRANT_ORDER.map((q) => el("td", { class: "num" }, `${c[q].count} (${pct(c[q].share)})`)),
  )));
  $("cuts").textContent = `${answer.cuts.hindsight.rule}. ${answer.cuts.judge.rule}.`;
}

function renderList(answer, key) {
  const listing = answer.ideas[key];
  const box = el("div", { class: "quad-list", "data-quadrant": key });
  box.append(el("h3", {}, `${listing.label} · ${listing.total}`));
  const t = el("table", {});
  t.append(el("thead", {}, el("tr", {}, el("th", {}, "idea"), el("th", {}, "group"), el("th", { class: "num" }, "HindSight"),
    el("th", { class: "num" }, "judge"), el("th", {}, "best match"))));
  t.append(el("tbody", {}, listing.items.map((it) => el("tr", { "data-idea": it.idea_pk, onclick: () => openIdea(it.idea_pk) },
    el("td", {}, wrapId(it.idea_id)), el("td", {}, swatch(it.group), wrapId(it.group)),
    el("td", { class: "num" }, fmt(it.score)), el("td", { class: "num" }, fmt(it.judge_value, 1)),
    el("td", { class: "title" }, it.best_match ? `${it.best_match.title} (${fmt(it.best_match.similarity, 2)}${it.best_match.above_threshold ? "" : ", not a match"})` : "–"),
  ))));
  box.append(t);
  if (listing.pages > 1) {
    const page = listing.page;
    box.append(el("div", { class: "pager" },
      el("button", { type: "button", onclick: () => loadList(key, page - 1), ...(page <= 1 ? { disabled: "" } : {}) }, "‹"),
      `page ${page} of ${listing.pages}`,
      el("button", { type: "button", onclick: () => loadList(key, page + 1), ...(page >= listing.pages ? { disabled: "" } : {}) }, "›")));
  }
  return box;
}

function listParams() {
  const p = judgeParams();
  p.set("sort", $("sort").value);
  p.set("order", $("order").value);
  p.set("page_size", "8");
  return p;
}

async function loadList(key, page) {
  const p = listParams();
  p.set("quadrant", key);
  p.set("page", String(page));
  try {
    const answer = await getJSON(`/v1/analysis/quadrants?${p}`);
    document.querySelector(`.quad-list[data-quadrant="${key}"]`).replaceWith(renderList(answer, key));
  } catch (err) { showError(err.message); }
}

function scoreLine(s) {
  const where = `model ${s.model}, index ${s.index_version}, window ${s.cutoff} … ${s.window_end}`
    + (s.verifier ? `; verified by ${s.verifier} (top ${s.verifier_top_k}; embedding alone: ${fmt(s.embedding_score)}, ${s.embedding_n_matches ?? 0} matched)` : "");
  if (s.matcher !== "hybrid") return `HindSight ${fmt(s.score)} (${s.matched ? "matched" : "no match"}); dense matcher, θ = ${s.theta}; ${where}`;
  const t = s.thresholds || {};
  const thr = (dec) => t[dec] ? Object.entries(t[dec]).map(([shape, v]) => `${shape} ${fmt(v, 3)}`).join(", ") : "–";
  return `HindSight ${fmt(s.score)} (${s.n_matches ?? 0} realised), direction ${fmt(s.direction_score)} (${s.n_direction_matches ?? 0} direction); ` +
    `hybrid matcher ${s.matcher_version}, thresholds realised ${thr("realised")}, direction ${thr("direction")}; ${where}`;
}

function denseTable(matches) {
  return el("table", { id: "matches-table" },
    el("thead", {}, el("tr", {}, ["#", "paper", "venue", "year", "citations", "similarity", "impact", "≥ θ"].map((h) => el("th", {}, h)))),
    el("tbody", {}, matches.map((m) => el("tr", {},
      el("td", {}, String(m.rank)), el("td", { class: "title" }, m.title), el("td", {}, m.venue || "–"),
      el("td", {}, String(m.year)), el("td", { class: "num" }, m.citations ?? "–"),
      el("td", { class: "num" }, fmt(m.similarity)), el("td", { class: "num" }, fmt(m.impact)),
      el("td", { class: m.above_threshold ? "yes" : "" }, m.above_threshold ? "yes" : "no")))));
}

function hybridTable(matches, verified) {
  const flag = (v) => el("td", { class: v ? "yes" : "" }, v ? "yes" : "no");
  // verified: the embedding features' decision beside the verifier's reading, which decides
  const heads = verified
    ? ["#", "paper", "venue", "year", "similarity", "p realised", "embedding realised", "p direction", "embedding direction", "p method",
      "verifier p direction", "verifier p realised", "realised", "direction", "impact", "evidence"]
    : ["#", "paper", "venue", "year", "similarity", "p realised", "realised", "p direction", "direction", "p method", "impact", "evidence"];
  const verdict = (m) => m.verifier
    ? [el("td", { class: "num verifier" }, fmt(m.verifier.p_direction, 3)), el("td", { class: "num verifier" }, fmt(m.verifier.p_realised, 3)),
      flag(m.realised), flag(m.direction)]
    : [el("td", { class: "muted", colspan: "2" }, "not read"), flag(m.realised), flag(m.direction)];
  return el("table", { id: "matches-table", "data-matcher": "hybrid", "data-verified": verified ? "yes" : "no" },
    el("thead", {}, el("tr", {}, heads.map((h) => el("th", {}, h)))),
    el("tbody", {}, matches.map((m) => el("tr", {},
      el("td", {}, String(m.rank)), el("td", { class: "title" }, m.title), el("td", {}, m.venue || "–"),
      el("td", {}, String(m.year)), el("td", { class: "num" }, fmt(m.similarity)),
      el("td", { class: "num" }, fmt(m.p_realised, 3)), flag(verified ? m.embedding_realised : m.realised),
      el("td", { class: "num" }, fmt(m.p_direction, 3)), flag(verified ? m.embedding_direction : m.direction),
      el("td", { class: "num" }, fmt(m.p_method, 3)),
      ...(verified ? verdict(m) : []),
      el("td", { class: "num" }, fmt(m.impact)),
      el("td", { class: "evidence" },
        m.problem_sentence ? el("div", {}, el("b", {}, "problem: "), m.problem_sentence) : "",
        m.problem_sentence ? el("div", {}, el("b", {}, "method: "), m.evidence_sentence || "–") : (m.evidence_sentence || "–"),
        m.shared_terms && m.shared_terms.length ? el("div", { class: "muted" }, `shared: ${m.shared_terms.join(", ")}`) : "")))));
}

async function openIdea(pk) {
  try {
    const d = await getJSON(`/v1/analysis/ideas/${pk}`);
    const box = $("idea-detail");
    const s = d.score;
    box.replaceChildren(
      el("h2", {}, `${d.idea_id} · ${d.system}/${d.run}`),
      d.origin ? el("p", { class: "muted", id: "idea-origin" }, [d.origin.title ? el("b", {}, d.origin.title) : "",
        ` ${[d.origin.generator, d.origin.topic].filter(Boolean).join(" · ")} · ${d.origin.file || ""}`]) : "",
      el("p", {}, el("b", {}, "Problem: "), d.problem || d.text || "–"),
      el("p", {}, el("b", {}, "Method: "), d.method || "–"),
      el("p", { class: "muted" }, s ? scoreLine(s) : "not scored"),
      s && s.warnings && s.warnings.length ? el("ul", { id: "idea-warnings", class: "warnings" },
        s.warnings.map((w) => el("li", {}, w))) : "",
      el("p", {}, d.judges.map((j) => `${j.judge}: ` + JUDGE_DIMENSIONS.filter((k) => j[k] !== null && j[k] !== undefined)
        .map((k) => `${k} ${fmt(j[k], 1)}`).join(", ")).join(" · ") || "no judge scores"),
      priorArtTimeline(d),
      el("h3", {}, "After the cutoff"),
      s && (s.matcher === "hybrid" || s.verifier) ? hybridTable(d.matches, Boolean(s.verifier)) : denseTable(d.matches),
      priorArtSection(d),
    );
    $("idea-dialog").showModal();
  } catch (err) { showError(err.message); }
}

async function refresh() {
  showError("");
  if (document.querySelector("#runs input") && !document.querySelector("#runs input:checked")) {
    showError("pick at least one run");
    return;
  }
  const seq = (state.refreshes = (state.refreshes || 0) + 1);
  const sel = selectionParams();
  const jp = judgeParams();
  $("systems-csv").href = `/v1/analysis/systems?${sel}&format=csv`;
  $("corr-csv").href = `/v1/analysis/correlations?${sel}&format=csv`;
  $("quad-csv").href = `/v1/analysis/quadrants?${jp}&format=csv&table=ideas`;
  $("quad-svg").href = `/v1/analysis/quadrants.svg?${jp}`;
  $("report-link").href = `/v1/report?${reportParams()}`;
  const errors = [];
  try {
    const systems = await getJSON(`/v1/analysis/systems?${sel}`);
    if (seq !== state.refreshes) return;
    renderSystems(systems);
    showPlot($("distribution-plot"), `/v1/analysis/distributions.png?${sel}`,
      "The score distributions could not be drawn for this selection.");
    // several windows shown apart: say why, whoever chose the grouping
    const grouped = systems.windows.length > 1 && !systems.pooled_windows && $("group_by").value === "window";
    showNotice(grouped ? `The selected runs were scored in ${systems.windows.length} windows, so their ideas are `
      + "grouped per system @ window: a score at one cutoff counts matches among other papers than a score at "
      + "another (tick \u201cpool windows\u201d to pool them anyway)." : "");
  } catch (err) {
    errors.push(err);
    table("systems-table", [[err.message]], []);
    table("comparison-table", [], []);
    $("prior-art-systems").replaceChildren();
    noPlot($("distribution-plot"), `No score distributions: ${lower(err.message)}`);
  }
  try {
    renderCorrelations(await getJSON(`/v1/analysis/correlations?${sel}`));
  } catch (err) {
    errors.push(err);
    table("corr-table", [[`No correlations: ${lower(err.message)}`]], []);
  }
  const clearQuadrants = () => {
    noPlot($("quadrant-plot"), "");
    $("counts-table").replaceChildren();
    $("quadrant-lists").replaceChildren();
    $("cuts").textContent = "";
  };
  const quadrantSentence = (text) => {
    clearQuadrants();
    $("quad-layout").hidden = true;
    document.querySelector("#quadrant-section .listing-controls").hidden = true;
    $("quadrant-empty").hidden = false;
    $("quadrant-empty").textContent = text;
  };
  if (!state.judges.length) {
    // nothing to plot: say what the panel needs instead of showing a broken image
    quadrantSentence("Quadrants need judge scores, and there are none yet: import an LLM judge's "
      + "scores with `hindsight judge import FILE`, or score an AI-Scientist ideas.json (its own ratings become the "
      + "judge ai-scientist-self). The ideas and their matches are listed above without them.");
    $("quadrant-section").dataset.ready = "no-judges";
  } else {
    try {
      const answer = await getJSON(`/v1/analysis/quadrants?${listParams()}`);
      $("quad-layout").hidden = false;
      document.querySelector("#quadrant-section .listing-controls").hidden = false;
      $("quadrant-empty").hidden = true;
      renderCounts(answer);
      $("quadrant-lists").replaceChildren(...QUADRANT_ORDER.map((q) => renderList(answer, q)));
      showPlot($("quadrant-plot"), `/v1/analysis/quadrants.png?${jp}`, "The quadrant plot could not be drawn for this selection.");
      $("quadrant-section").dataset.ready = `${answer.judge}:${answer.dimension}`;
    } catch (err) {
      errors.push(err);
      quadrantSentence(`No quadrants: ${lower(err.message)}`);
      $("quadrant-section").dataset.ready = "refused";
    }
  }
  if (seq !== state.refreshes) return;
  // runs scored in different windows are refused when pooled: every panel shows them per window instead
  const mixed = errors.some((e) => e.field === "pool_windows");
  if (mixed && $("group_by").value !== "window" && !$("pool_windows").checked) {
    $("group_by").value = "window";
    $("controls").dispatchEvent(new Event("change")); // every panel that follows the controls redraws
  }
}

async function init() {
  const errors = [];
  try {
    const runs = await getJSON("/v1/runs");
    $("runs").replaceChildren(...(runs.length ? runs.map((r) => el("label", {},
      el("input", { type: "checkbox", value: r.id, checked: "" }), `${r.system} / ${r.label} (${r.ideas})`))
      : [el("span", { class: "muted" }, "no runs yet: score some ideas first")]));
  } catch (err) {
    errors.push(`runs: ${err.message}`);
    $("runs").replaceChildren(el("span", { class: "muted" }, "runs unavailable: showing all"));
  }
  try {
    const judges = await getJSON("/v1/judge-scores");
    state.judges = judges;
    $("judge").replaceChildren(...judges.map((j) => el("option", { value: j.judge }, `${j.judge} (${j.ideas})`)));
  } catch (err) { errors.push(`judges: ${err.message}`); }
  showError(errors.join("\n"));
  $("hs_kind").addEventListener("change", () => { $("hs_value").hidden = $("hs_kind").value !== "value"; });
  $("judge_kind").addEventListener("change", () => { $("judge_value").hidden = $("judge_kind").value !== "value"; });
  $("controls").addEventListener("change", refresh);
  $("controls").addEventListener("submit", (e) => { e.preventDefault(); refresh(); });
  $("sort").addEventListener("change", refresh);
  $("order").addEventListener("change", refresh);
  await refresh();
  if (errors.length) showError([...errors, $("error").textContent].filter(Boolean).join("\n"));
}

init();
