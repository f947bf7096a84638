// The LLM judge beside HindSight: per judge revision made here (`hindsight judge run`), its prompt, decoding and
// invalid answers, its quadrant counts (overall, the dashboard's cuts and runs) and the system it rates highest;
// the flip rates between revisions of one model (the audit at the server's cut); a note when two revisions of one
// judge disagree on which system leads. Uses el, $, fmt, table, getJSON, judgeParams, selectionParams, QUADRANT_ORDER
// from dashboard.js.
"use strict";

function judgingLeader(systems, name) {
  // the group this judge rates highest on overall (mean), with the runner-up's mean
  const means = systems.groups.map((g) => [g.group, g.judges?.[name]?.overall?.mean]).filter(([, m]) => m !== null && m !== undefined);
  means.sort((a, b) => b[1] - a[1]);
  return means.length ? { group: means[0][0], mean: means[0][1], next: means[1] } : null;
}

let judgingRefreshes = 0;

async function judgingRefresh() {
  const note = $("judging-note");
  const seq = (judgingRefreshes += 1);
  let revisions;
  try { revisions = await getJSON("/v1/llm-judge/revisions"); } catch (err) { note.textContent = err.message; return; }
  $("judging-empty").hidden = revisions.length > 0;
  if (!revisions.length) {
    $("judging-table").replaceChildren();
    $("judging-flips").replaceChildren();
    note.textContent = "";
    $("judging-section").dataset.ready = "none";
    return;
  }
  const sel = selectionParams();
  let systems = { groups: [] };
  try { systems = await getJSON(`/v1/analysis/systems?${sel}`); } catch (err) { note.textContent = err.message; }
  if (seq !== judgingRefreshes) return; // the selection changed meanwhile: the later refresh draws
  const leaders = {};
  const rows = [];
  for (const r of revisions) {
    const p = judgeParams();
    p.set("judge", r.name);
    p.set("dimension", "overall");
    p.set("page_size", "1");
    let all = null;
    try { all = (await getJSON(`/v1/analysis/quadrants?${p}`)).counts.find((c) => c.group === "all"); } catch (err) { all = null; }
    const lead = judgingLeader(systems, r.name);
    leaders[r.name] = lead;
    rows.push(el("tr", {}, el("td", {}, r.name), el("td", {}, r.prompt), el("td", {}, r.decoding),
      el("td", { class: "num" }, String(r.invalid)),
      ...QUADRANT_ORDER.map((k) => el("td", { class: "num" }, all ? String(all[k].count) : "–")),
      el("td", {}, lead ? `${lead.group} (${fmt(lead.mean, 2)})` : "–")));
  }
  table("judging-table", [["judge revision"], ["prompt"], ["decoding"], ["invalid answers", "num"],
    ["true positive", "num"], ["hidden gem", "num"], ["overhyped", "num"], ["true negative", "num"],
    ["rated highest (mean overall)"]], rows);

  const byModel = {};
  for (const r of revisions) (byModel[`${r.backend}:${r.weights}`] ??= []).push(r);
  const runs = sel.getAll("runs");
  const flipRows = [];
  const notes = [];
  for (const group of Object.values(byModel)) {
    for (let i = 0; i < group.length; i += 1) {
      for (let j = i + 1; j < group.length; j += 1) {
        const [a, b] = [group[i], group[j]];
        const q = new URLSearchParams();
        q.append("judge", a.name);
        q.append("judge", b.name);
        runs.forEach((run) => q.append("run", run));
        try {
          const audit = await getJSON(`/v1/llm-judge/audit?${q}`);
          const dims = ["novelty", "feasibility", "impact", "overall"].map((d) => audit.dimensions[d]);
          flipRows.push(el("tr", {}, el("td", {}, a.name), el("td", {}, b.name),
            ...dims.map((d) => el("td", { class: "num" }, d && d.flip_rate !== null ? `${fmt(d.flip_rate, 2)} (${d.flips}/${d.n_compared})` : "–")),
            el("td", { class: "num" }, fmt(audit.cut, 1))));
        } catch (err) {
          flipRows.push(el("tr", {}, el("td", {}, a.name), el("td", {}, b.name), el("td", { colspan: "5" }, err.message)));
        }
        const [la, lb] = [leaders[a.name], leaders[b.name]];
        if (la && lb && la.group !== lb.group) {
          notes.push(`${a.name} rates ${la.group} highest (${fmt(la.mean, 2)}), ${b.name} rates ${lb.group} highest `
            + `(${fmt(lb.mean, 2)}): two revisions of one judge disagree on which system leads.`);
        }
      }
    }
  }
  table("judging-flips", [["judge a"], ["judge b"], ["novelty flips", "num"], ["feasibility flips", "num"],
    ["impact flips", "num"], ["overall flips", "num"], ["cut", "num"]], flipRows);
  $("judging-flips").hidden = !flipRows.length;
  if (seq !== judgingRefreshes) return;
  note.textContent = notes.join(" ");
  note.className = notes.length ? "notice" : "muted";
  $("judging-section").dataset.ready = `${revisions.length}`;
}

$("controls").addEventListener("change", () => { judgingRefresh().catch((err) => { $("judging-note").textContent = err.message; }); });
judgingRefresh().catch((err) => { $("judging-note").textContent = err.message; });
