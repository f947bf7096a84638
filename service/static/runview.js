// Run view: every idea of the runs ticked above (/v1/runs/{id}/ideas), sortable and filterable, each opening the
// drill-down; and the corpus panel (/v1/corpus).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const fmt = (x, digits = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
  const view = { rows: [], sort: "score", desc: true };
  const COLUMNS = [
    ["idea_id", "idea"], ["group", "system / run"], ["topic", "topic"], ["title", "title"],
    ["score", "score", "num"], ["decision", "decision"], ["direction_score", "direction score", "num"],
    ["best_title", "best match"], ["best_similarity", "similarity", "num"], ["best_p_realised", "p realised", "num"],
    ["best_p_direction", "p direction", "num"], ["best_verifier_p_realised", "verifier p realised", "num"],
    ["embedding_score", "embedding score", "num"],
  ];

  function node(tag, attrs = {}, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k.startsWith("on")) n.addEventListener(k.slice(2), v); else n.setAttribute(k, v);
    }
    for (const c of children.flat()) n.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
    return n;
  }

  const decision = (r) => (!r.scored ? "not scored" : r.matched ? "realised" : r.direction ? "direction" : "none");

  function shown() {
    const text = $("runview-filter").value.trim().toLowerCase();
    const want = $("runview-decision").value;
    const topic = $("runview-topic").value;
    const rows = view.rows.filter((r) => (!want || r.decision === want) && (!topic || r.topic === topic)
      && (!text || [r.idea_id, r.title, r.topic, r.best_title, r.best_paper_id, r.file]
        .some((v) => v && v.toLowerCase().includes(text))));
    const key = view.sort;
    const sign = view.desc ? -1 : 1;
    return rows.sort((a, b) => {
      const x = a[key], y = b[key];
      if (x === y) return a.idea_pk - b.idea_pk;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (typeof x === "number" ? x - y : String(x).localeCompare(String(y))) * sign;
    });
  }

  function render() {
    const rows = shown();
    const head = node("tr", {}, COLUMNS.map(([key, label, cls]) => node("th", {
      class: `${cls || ""} sortable${view.sort === key ? (view.desc ? " desc" : " asc") : ""}`, "data-key": key,
      onclick: () => { view.desc = view.sort === key ? !view.desc : key === "score" || key.startsWith("best_") || key === "direction_score"; view.sort = key; render(); },
    }, label)));
    const body = rows.map((r) => node("tr", { "data-idea": r.idea_pk, onclick: () => openIdea(r.idea_pk) },
      node("td", {}, wrapId(r.idea_id)), node("td", {}, r.group), node("td", {}, wrapId(r.topic || "–")),
      node("td", { class: "title" }, r.title || "–"),
      node("td", { class: "num" }, fmt(r.score)),
      node("td", { class: r.decision === "realised" ? "yes" : r.decision === "direction" ? "dir" : "" },
        r.decision + (r.n_direction_matches ? ` (${r.n_matches ?? 0}/${r.n_direction_matches})` : ""),
        r.warnings && r.warnings.length ? node("span", { class: "warn", title: r.warnings.join("\n") }, " ⚠") : ""),
      node("td", { class: "num" }, fmt(r.direction_score)),
      node("td", { class: "title" }, r.best_title ? `${r.best_title}${r.best_kind === "nearest" ? " (nearest, not a match)" : ""}` : "–"),
      node("td", { class: "num" }, fmt(r.best_similarity)), node("td", { class: "num" }, fmt(r.best_p_realised)),
      node("td", { class: "num" }, fmt(r.best_p_direction)),
      node("td", { class: "num", title: r.verifier ? `verified by ${r.verifier}` : "not verified" }, fmt(r.best_verifier_p_realised)),
      node("td", { class: "num" }, r.verifier ? fmt(r.embedding_score) : "–")));
    $("runview-table").replaceChildren(node("thead", {}, head), node("tbody", {}, body));
    const realised = view.rows.filter((r) => r.decision === "realised").length;
    const direction = view.rows.filter((r) => r.decision === "direction").length;
    $("runview-count").textContent = `${rows.length} of ${view.rows.length} ideas shown · ${realised} realised, `
      + `${direction} direction only`;
  }

  let loads = 0;

  async function load() {
    const seq = (loads += 1);
    const ids = [...document.querySelectorAll("#runs input:checked")].map((b) => b.value);
    const answers = [];
    for (const id of ids) {
      const res = await fetch(`/v1/runs/${id}/ideas`);
      if (res.ok) answers.push(await res.json());
    }
    if (seq !== loads) return; // the ticked runs changed meanwhile: the later load draws
    view.rows = answers.flatMap((a) => a.ideas.map((r) => ({ ...r, group: `${a.system} / ${a.run}`, decision: decision(r) })));
    const topics = [...new Set(view.rows.map((r) => r.topic).filter(Boolean))].sort();
    const current = $("runview-topic").value;
    $("runview-topic").replaceChildren(node("option", { value: "" }, "all"),
      ...topics.map((t) => node("option", { value: t }, t)));
    if (topics.includes(current)) $("runview-topic").value = current;
    $("runview-csv").replaceChildren(...answers.map((a) => node("a", { class: "csv", href: `/v1/runs/${a.run_id}/ideas?format=csv` },
      `CSV ${a.system}/${a.run}`)));
    render();
    $("runview-section").dataset.ready = String(view.rows.length);
  }

  async function corpus() {
    // a home without an index has no corpus to show (and /v1/corpus would answer 503)
    const index = await fetch("/v1/index").then((r) => r.json()).catch(() => ({}));
    const res = index.manifest ? await fetch("/v1/corpus") : null;
    if (!res || !res.ok) { $("corpus-summary").textContent = "No index is loaded yet."; $("corpus-section").dataset.ready = "no-index"; return; }
    const c = await res.json();
    const share = c.citations.share_known === null ? "–" : `${(100 * c.citations.share_known).toFixed(0)}%`;
    $("corpus-summary").textContent = `Index ${c.index_version} (${c.model}): ${c.papers} papers in ${c.window.start} … `
      + `${c.window.end}; ${share} with a known citation count (${c.citations.missing} missing, counted as 0); `
      + `${c.top_venue_papers} at a top venue.`;
    const most = Math.max(1, ...c.per_month.map((m) => m.papers));
    $("corpus-months").replaceChildren(...c.per_month.map((m) => node("div", { class: "bar", title: `${m.month}: ${m.papers} papers` },
      node("span", { class: "fill", style: `height:${(100 * m.papers / most).toFixed(1)}%` }),
      node("span", { class: "label" }, m.month.slice(2)))));
    const venues = c.venues.map((v) => node("tr", {}, node("td", {}, v.venue), node("td", { class: "num" }, String(v.papers))));
    if (c.other_venues.venues) venues.push(node("tr", {}, node("td", {}, `${c.other_venues.venues} other venues`), node("td", { class: "num" }, String(c.other_venues.papers))));
    $("corpus-venues").replaceChildren(node("thead", {}, node("tr", {}, node("th", {}, "venue"), node("th", { class: "num" }, "papers"))), node("tbody", {}, venues));
    $("corpus-section").dataset.ready = String(c.papers);
  }

  async function init() {
    corpus();
    for (let i = 0; i < 200 && $("runs").textContent.includes("loading"); i++) await new Promise((r) => setTimeout(r, 50));
    ["runview-filter", "runview-decision", "runview-topic"].forEach((id) => $(id).addEventListener("input", render));
    $("controls").addEventListener("change", load);
    load();
  }

  init();
})();
