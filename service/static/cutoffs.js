// Cutoff sensitivity panel: /v1/analysis/cutoffs for the runs ticked above, at the cutoffs typed here.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const fmt = (x, digits = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
  const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(0)}%`);
  const pval = (p) => (p === null || p === undefined ? "–" : p < 0.001 ? "< 0.001" : p.toFixed(3));

  function cell(text, cls = "", title = "") {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    if (title) td.title = title;
    return td;
  }

  function addMonths(iso, months) {
    const d = new Date(`${iso}T00:00:00Z`);
    d.setUTCMonth(d.getUTCMonth() + months);
    return d.toISOString().slice(0, 10);
  }

  function params() {
    const p = new URLSearchParams();
    document.querySelectorAll("#runs input:checked").forEach((box) => p.append("runs", box.value));
    // per system @ window: each run is its own group, since every cutoff re-scores all of its ideas
    p.set("group_by", $("group_by").value === "system" ? "system" : "run");
    p.set("cutoffs", $("cutoffs-input").value.replace(/\s+/g, ""));
    return p;
  }

  function fail(message) {
    const box = $("cutoffs-error");
    box.hidden = !message;
    box.textContent = message || "";
  }

  function render(answer) {
    const groups = [...new Set(answer.cutoffs.flatMap((e) => e.groups.map((g) => g.group)))].sort();
    const head = document.createElement("tr");
    ["cutoff", "papers", ...groups.map((g) => `${g}: mean [95% CI]`), ...groups.map((g) => `${g}: match`), "comparison"]
      .forEach((h, i) => { const th = document.createElement("th"); th.textContent = h; if (i) th.className = "num"; head.append(th); });
    const body = document.createElement("tbody");
    for (const e of answer.cutoffs) {
      const tr = document.createElement("tr");
      const by = Object.fromEntries(e.groups.map((g) => [g.group, g]));
      tr.append(cell(e.cutoff), cell(String(e.papers), "num"));
      for (const g of groups) {
        const r = by[g];
        const leak = r.leak_risk ? ` · leak risk (knows to ${r.knowledge_cutoff})` : "";
        tr.append(cell(`${fmt(r.mean_score)} [${r.ci ? `${fmt(r.ci[0])}, ${fmt(r.ci[1])}` : "–"}]${r.leak_risk ? " ⚠" : ""}`,
          "num" + (r.leak_risk ? " leak" : ""), leak.slice(3)));
      }
      for (const g of groups) tr.append(cell(pct(by[g].match_rate), "num"));
      tr.append(cell(e.comparisons.map((c) => `${c.a} vs ${c.b}: p ${pval(c.mannwhitney_p)}`).join("; ") || "–", "num"));
      body.append(tr);
    }
    const thead = document.createElement("thead");
    thead.append(head);
    $("cutoffs-table").replaceChildren(thead, body);
    const perRun = $("group_by").value === "window"
      ? "Grouped per run: each cutoff re-scores every idea of the run, so the cutoffs here are the windows. " : "";
    $("cutoffs-stability").textContent = perRun + answer.stability.map((s) =>
      `${s.a} vs ${s.b}: leader ${s.consistent ? "holds at every cutoff" : "changes"} (${s.leader_by_cutoff.join(", ")})`).join(" · ");
    $("cutoffs-section").dataset.ready = answer.cutoffs.map((e) => e.cutoff).join(",");
  }

  let runs = 0;

  async function run() {
    fail("");
    if (!document.querySelector("#runs input:checked")) { fail("Pick at least one run."); return; }
    const seq = (runs += 1);
    const p = params();
    $("cutoffs-csv").href = `/v1/analysis/cutoffs?${p}&format=csv`;
    $("cutoffs-svg").href = `/v1/analysis/cutoffs.svg?${p}`;
    try {
      const res = await fetch(`/v1/analysis/cutoffs?${p}`);
      const body = await res.json().catch(() => ({}));
      if (seq !== runs) return;
      if (!res.ok) throw new ApiError(res.status, body.detail ?? body);
      render(body);
      showPlot($("cutoffs-plot"), `/v1/analysis/cutoffs.png?${p}`, "The cutoff-sensitivity plot could not be drawn "
        + "for this selection; the table above holds its figures.");
    } catch (err) {
      fail(`No cutoff sensitivity: ${lower(err.message)}`);
      $("cutoffs-table").replaceChildren();
      $("cutoffs-stability").textContent = "";
      noPlot($("cutoffs-plot"), "");
      $("cutoffs-section").dataset.ready = "refused";
    }
  }

  async function init() {
    $("cutoffs-form").addEventListener("submit", (e) => { e.preventDefault(); run(); });
    let manifest = null;
    try { manifest = (await (await fetch("/v1/index")).json()).manifest; } catch (err) { /* shown below */ }
    if (!manifest) { $("cutoffs-window").textContent = "No index is loaded yet."; return; }
    const { start, end } = manifest.window;
    $("cutoffs-window").textContent = `Index ${manifest.version} covers ${start} … ${end}.`;
    const dates = manifest.vector_ids === "date_order" ? [0, 6, 12].map((m) => addMonths(start, m)).filter((d) => d <= end) : [start];
    $("cutoffs-input").value = dates.join(",");
    // wait for the run list, then follow its changes
    for (let i = 0; i < 200 && $("runs").textContent.includes("loading"); i++) await new Promise((r) => setTimeout(r, 50));
    $("controls").addEventListener("change", run);
    if (document.querySelector("#runs input:checked")) run();
  }

  init();
})();
