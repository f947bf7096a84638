// Labelling view (one drawn idea at a time, each choice written at once) and the estimates panel (matcher,
// labels_only and ppi with their intervals). Uses el, $, fmt, getJSON, CLASS_NAMES from dashboard.js.
"use strict";

// seq: the latest load asked for; busy: loads and draw lists under way (data-busy, for whoever waits on the view);
// writes: the labels written in this page, numbered, so that an answer read before a write does not hide it
const lab = { item: null, selected: 0, seq: 0, busy: 0, writes: [] };
const LABEL_KEYS = { r: "realised", d: "direction", n: "none" };

function labStore(key, value) {
  if (value === undefined) return localStorage.getItem(`hindsight.labels.${key}`) || "";
  localStorage.setItem(`hindsight.labels.${key}`, value);
  return value;
}

function labMessage(text, isError = false) {
  const box = $("labels-message");
  box.textContent = text || "";
  box.className = isError ? "error" : "muted";
  box.hidden = !text;
}

async function labSend(url, body) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${$("labels-token").value.trim()}` },
    body: JSON.stringify(body),
  });
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, answer.detail ?? answer);
  return answer;
}

function highlighted(text, sentences) {
  // the abstract with the evidence sentences marked
  const marks = sentences.filter((s) => s && text.includes(s));
  if (!marks.length) return [text];
  const parts = [];
  let rest = text;
  while (rest) {
    const hits = marks.map((s) => [rest.indexOf(s), s]).filter(([i]) => i >= 0).sort((a, b) => a[0] - b[0]);
    if (!hits.length) { parts.push(rest); break; }
    const [i, s] = hits[0];
    if (i > 0) parts.push(rest.slice(0, i));
    parts.push(el("mark", {}, s));
    rest = rest.slice(i + s.length);
  }
  return parts;
}

async function labBusy(work) {
  lab.busy += 1;
  $("labels-section").dataset.busy = String(lab.busy);
  try { return await work(); } finally {
    lab.busy -= 1;
    $("labels-section").dataset.busy = String(lab.busy);
  }
}

function labRuns() { return labBusy(labRunsNow); }
function labDraws() { return labBusy(labDrawsNow); }
function labLoad(position) { return labBusy(() => labLoadNow(position)); }

async function labRunsNow() {
  const runs = await getJSON("/v1/runs");
  const select = $("labels-run");
  select.replaceChildren(...runs.map((r) => el("option", { value: String(r.id) }, `${r.system} / ${r.label} (run ${r.id})`)));
  const saved = labStore("run");
  if (saved && runs.some((r) => String(r.id) === saved)) select.value = saved;
  await labDraws();
}

async function labDrawsNow() {
  const run = $("labels-run").value;
  const select = $("labels-draw");
  if (!run) { select.replaceChildren(); return; }
  labStore("run", run);
  const status = await getJSON(`/v1/labels/status?run=${encodeURIComponent(run)}`);
  const draws = status.strata.flatMap((s) => s.draws);
  select.replaceChildren(...draws.map((d) => el("option", { value: String(d.draw) },
    `draw ${d.draw}: ${d.n} of ${d.population} ideas (seed ${d.seed})`)));
  const saved = labStore("draw");
  if (saved && draws.some((d) => String(d.draw) === saved)) select.value = saved;
  $("labels-empty").hidden = draws.length > 0;
  await labLoad();
}

async function labLoadNow(position) {
  const draw = $("labels-draw").value;
  const annotator = $("labels-annotator").value.trim();
  if (!draw) { $("labels-card").replaceChildren(); $("labels-progress").textContent = ""; return; }
  labStore("draw", draw);
  if (!annotator) { labMessage("Enter your name as annotator to start.", true); return; }
  const p = new URLSearchParams({ annotator, top_k: $("labels-topk").value || "5" });
  if (position) p.set("position", String(position));
  const seq = ++lab.seq;
  const written = lab.writes.length;
  $("labels-card").dataset.ready = "";
  const item = await getJSON(`/v1/labels/draws/${draw}/item?${p}`);
  if (seq !== lab.seq) return; // a later load was asked for: its answer is the one to show
  // labels written while this answer was on its way may be missing from it: they are stored, so they are shown
  for (const w of lab.writes.slice(written)) labShowWrite(item, w);
  lab.item = item;
  lab.selected = 0;
  labRender();
}

function labRender() {
  const item = lab.item;
  $("labels-card").dataset.ready = "1";
  const annotator = item.annotator;
  $("labels-progress").textContent = `${item.progress.labelled} of ${item.progress.drawn} ideas labelled by ${annotator}`;
  $("labels-section").dataset.labelled = String(item.progress.labelled);
  const card = $("labels-card");
  if (!item.idea) {
    card.replaceChildren(el("p", { class: "notice" }, `Every idea of draw ${item.draw.draw} is labelled by ${annotator}.`));
    return;
  }
  const idea = item.idea;
  card.dataset.idea = idea.idea_id;
  const all = shownCandidates(idea);
  const rows = all.map((c, i) => {
    const current = idea.labels[c.paper_id] || "";
    const buttons = ["realised", "direction", "none"].map((choice) => el("button", {
      type: "button", class: `choice${current === choice ? " chosen" : ""}`, "data-choice": choice,
      "aria-pressed": String(current === choice),
      onclick: () => labWrite(i, choice),
    }, `${choice} (${choice[0]})`));
    const before = c.side === "before";
    return el("div", { class: `candidate${i === lab.selected ? " selected" : ""}${before ? " before-cutoff" : ""}`,
      "data-paper": c.paper_id, "data-label": current, "data-side": c.side,
      onclick: () => { lab.selected = i; labRender(); } },
      el("div", { class: "cand-head" }, el("b", {}, `${i + 1}. ${c.title}`),
        before ? el("span", { class: "side-badge", title: "published before the cutoff the idea was scored at: " +
          "prior art, the look-back side" }, `before the cutoff${c.publication_date ? ` · ${c.publication_date}` : ""}`) : "",
        el("span", { class: "muted" }, ` ${c.venue || ""} ${c.year || ""} · cosine ${fmt(c.similarity, 2)}` +
          (c.p_direction !== null ? ` · p direction ${fmt(c.p_direction, 2)}` : ""))),
      el("p", { class: "abstract" }, highlighted(c.abstract || "", [c.evidence_sentence, c.problem_sentence])),
      el("div", { class: "choices" }, buttons));
  });
  card.replaceChildren(
    el("h3", {}, `${idea.position}. ${idea.title || idea.idea_id}`),
    el("p", { class: "muted" }, idea.idea_id),
    el("p", {}, el("b", {}, "Problem: "), idea.problem || idea.text || ""),
    el("p", {}, el("b", {}, "Method: "), idea.method || ""),
    el("div", { class: "candidates", id: "labels-after" },
      el("h4", {}, `After the cutoff${idea.cutoff ? ` (${idea.cutoff})` : ""}: does a later paper realise it?`),
      rows.slice(0, idea.candidates.length)),
    all.length > idea.candidates.length ? el("div", { class: "candidates", id: "labels-before" },
      el("h4", {}, `Before the cutoff: prior art (published before ${idea.cutoff || "the cutoff"}), the same three choices`),
      rows.slice(idea.candidates.length)) : "",
    el("div", { class: "choices" },
      el("button", { type: "button", id: "labels-none-all", onclick: labNoneOfThese }, "none of these (x)"),
      el("button", { type: "button", id: "labels-prev", onclick: () => labLoad(Math.max(1, idea.position - 1)) }, "previous (p)"),
      el("button", { type: "button", id: "labels-next", onclick: () => labLoad() }, "next unlabelled (→)")),
  );
}

function shownCandidates(idea) {
  // both sides in one list (numbers and keys run over both): the forward candidates, then the look-back ones
  return idea.candidates.map((c) => ({ ...c, side: "after" })).concat(idea.lookback_candidates || []);
}

async function labWrite(index, choice) {
  const { draw, annotator, idea } = lab.item; // the item clicked: lab.item may change while the label is written
  const c = shownCandidates(idea)[index];
  try {
    await labSend("/v1/labels", { run: String(draw.run_id), idea_id: idea.idea_id, paper_id: c.paper_id,
      label: choice, annotator });
  } catch (err) { labMessage(`not saved: ${err.message}`, true); return; }
  labMessage("");
  const write = { draw: draw.draw, annotator, idea_id: idea.idea_id, paper_id: c.paper_id, choice };
  lab.writes.push(write);
  // a load answered while the label was being written may have replaced the item with one read before the write:
  // the label goes on whichever copy of this idea is shown now
  if (!labShowWrite(lab.item, write)) return;
  lab.selected = Math.min(index + 1, shownCandidates(lab.item.idea).length - 1);
  labRender();
}

function labShowWrite(item, w) {
  // puts a stored label on the item when it shows that idea of that draw to that annotator
  const shown = item.idea;
  if (!shown || shown.idea_id !== w.idea_id || item.draw.draw !== w.draw || item.annotator !== w.annotator) return false;
  if (!shown.labelled) { shown.labelled = true; item.progress.labelled += 1; }
  shown.labels[w.paper_id] = w.choice;
  return true;
}

async function labNoneOfThese() {
  const idea = lab.item.idea;
  const all = shownCandidates(idea);
  for (let i = 0; i < all.length; i++) {
    if (!idea.labels[all[i].paper_id]) await labWrite(i, "none");
  }
  await labLoad();
}

function labKeys(event) {
  if (!lab.item || !lab.item.idea || event.target.closest("input, select, textarea")) return;
  const n = shownCandidates(lab.item.idea).length;
  if (/^[1-9]$/.test(event.key) && Number(event.key) <= n) { lab.selected = Number(event.key) - 1; labRender(); }
  else if (LABEL_KEYS[event.key]) labWrite(lab.selected, LABEL_KEYS[event.key]);
  else if (event.key === "x") labNoneOfThese();
  else if (event.key === "ArrowRight") labLoad();
  else if (event.key === "p") labLoad(Math.max(1, lab.item.idea.position - 1));
  else if (event.key === "ArrowDown") { lab.selected = Math.min(lab.selected + 1, n - 1); labRender(); }
  else if (event.key === "ArrowUp") { lab.selected = Math.max(lab.selected - 1, 0); labRender(); }
  else return;
  event.preventDefault();
}

async function labNewDraw() {
  try {
    await labSend("/v1/labels/draws", { run: $("labels-run").value, n: Number($("labels-n").value || "20") });
    labStore("draw", "");
    await labDraws();
    const select = $("labels-draw");
    select.value = select.options[select.options.length - 1].value;
    await labLoad();
  } catch (err) { labMessage(`no draw: ${err.message}`, true); }
}

const ESTIMATE_METRICS = ["realised_rate", "direction_rate", "mean_score"];
const ci = (e) => (!e || e.value === null ? "–" : `${fmt(e.value)} [${fmt(e.ci[0])}, ${fmt(e.ci[1])}]`);

// per system @ window: the estimates of each window's runs on their own, as the systems panel groups them (and no
// difference across windows, which measure different futures); the agreement of all the labels at once
async function estimatesPerWindow(p) {
  const systems = await getJSON(`/v1/analysis/systems?${p}`);
  const ask = (runIds, pooled) => {
    const q = new URLSearchParams();
    runIds.forEach((r) => q.append("runs", r));
    q.set("predictor", p.get("predictor"));
    if (pooled) q.set("pool_windows", "true");
    return getJSON(`/v1/labels/estimates?${q}`);
  };
  const parts = await Promise.all(systems.groups.map((g) => ask(g.run_ids, false).then((a) => {
    a.groups.forEach((x) => { x.group = g.group; });
    return a;
  })));
  const all = await ask(systems.groups.flatMap((g) => g.run_ids), true);
  return { ...all, groups: parts.flatMap((a) => a.groups), differences: [], warnings: parts.flatMap((a) => a.warnings),
    selection: { ...all.selection, group_by: "window" } };
}

async function labEstimates() {
  // the runs, Group by, windows and Decision level of the systems panel
  const p = selectionParams();
  p.set("predictor", $("estimates-predictor").value);
  const seq = (lab.estimates = (lab.estimates || 0) + 1);
  let answer;
  try {
    answer = p.get("group_by") === "window" ? await estimatesPerWindow(p) : await getJSON(`/v1/labels/estimates?${p}`);
  } catch (err) {
    if (seq !== lab.estimates) return;
    $("estimates-note").textContent = `No estimates: ${lower(err.message)}`;
    $("estimates-table").replaceChildren();
    $("estimates-warnings").hidden = true;
    $("estimates-section").dataset.ready = "refused";
    return;
  }
  if (seq !== lab.estimates) return;
  $("estimates-note").textContent = answer.annotator
    ? `From ${answer.annotator}'s labels of randomly drawn ideas (${answer.annotator_rule}); predictor: ${answer.predictor.text}.`
    : "No labels yet: draw ideas and label them above.";
  const rows = answer.groups.flatMap((g) => ESTIMATE_METRICS.map((m) => el("tr", { "data-group": g.group, "data-metric": m },
    el("td", {}, g.group), el("td", {}, m), el("td", { class: "num" }, fmt(g[m].matcher)),
    el("td", { class: "num" }, ci(g[m].labels_only)), el("td", { class: "num" }, ci(g[m].ppi)),
    el("td", { class: "num" }, `${g[m].n_labelled} / ${g[m].n_unlabelled}`),
    el("td", { class: "num" }, g[m].labels_to_halve === null ? "–" : String(g[m].labels_to_halve)),
    el("td", {}, g[m].small_sample.small ? "small sample: pseudo-counts" : ""))));
  // the prior-art classes at the Decision control's level, from ideas labelled on both sides of the cutoff
  const level = $("level").value === "direction" ? "direction" : "realised";
  const classRows = answer.groups.flatMap((g) => (g.classes && g.classes.known ? CLASS_NAMES : []).map((c) => {
    const e = g.classes[level][c];
    return el("tr", { "data-group": g.group, "data-metric": `class:${c}` },
      el("td", {}, g.group), el("td", {}, `${c.replace("_", " ")} (${level})`), el("td", { class: "num" }, fmt(e.matcher)),
      el("td", { class: "num" }, ci(e.labels_only)), el("td", { class: "num" }, ci(e.ppi)),
      el("td", { class: "num" }, `${e.n_labelled} / ${e.n_unlabelled ?? "–"}`),
      el("td", { class: "num" }, e.labels_to_halve === null || e.labels_to_halve === undefined ? "–" : String(e.labels_to_halve)),
      el("td", {}, e.n_labelled ? "labelled on both sides" : "no idea labelled on both sides yet"));
  }));
  const diffs = answer.differences.flatMap((d) => ESTIMATE_METRICS.map((m) => el("tr", {},
    el("td", {}, `${d.a} − ${d.b}`), el("td", {}, m), el("td", { class: "num" }, fmt(d[m].matcher)),
    el("td", { class: "num" }, ci(d[m].labels_only)), el("td", { class: "num" }, ci(d[m].ppi)),
    el("td", {}), el("td", {}), el("td", {}))));
  table("estimates-table", [["group"], ["measure"], ["matcher", "num"], ["labels only [CI]", "num"], ["ppi [CI]", "num"],
    ["labelled / unlabelled", "num"], ["+labels to halve", "num"], ["note"]], rows.concat(classRows, diffs));
  const a = answer.agreement.overall;
  const lb = answer.agreement.lookback;
  $("estimates-agreement").textContent = (a.matcher && a.ideas
    ? `Matcher on ${a.ideas} labelled ideas, direction pairs: ${a.matcher.pair.direction.tp} right, ` +
      `${a.matcher.pair.direction.fp} wrong, ${a.matcher.pair.direction.fn} missed; realised pairs: ` +
      `${a.matcher.pair.realised.tp} right, ${a.matcher.pair.realised.fp} wrong, ${a.matcher.pair.realised.fn} missed.`
    : "") + (lb && lb.matcher && lb.ideas
    ? ` Before the cutoff (look-back side, ${lb.ideas} ideas), direction pairs: ${lb.matcher.pair.direction.tp} right, ` +
      `${lb.matcher.pair.direction.fp} wrong, ${lb.matcher.pair.direction.fn} missed; realised pairs: ` +
      `${lb.matcher.pair.realised.tp} right, ${lb.matcher.pair.realised.fp} wrong, ${lb.matcher.pair.realised.fn} missed.`
    : "");
  const pairs = answer.agreement.annotators.map((k) => el("li", { "data-annotators": `${k.a}|${k.b}` },
    `${k.a} and ${k.b} on ${k.ideas} ideas both labelled: pairs ${k.pair.agree} of ${k.pair.n} agree ` +
    `(the pairs both labelled; ${k.pair.only_a + k.pair.only_b} labelled by one only), ` +
    `Cohen's κ ${fmt(k.pair.kappa, 2)}, direction per pair κ ${fmt(k.pair_decision.direction.kappa, 2)}; ` +
    `per idea κ realised ${fmt(k.idea.realised.kappa, 2)}, ` +
    `direction ${fmt(k.idea.direction.kappa, 2)}. The estimates use ${answer.annotator}'s labels.`));
  $("estimates-annotators").replaceChildren(...pairs);
  $("estimates-warnings").replaceChildren(...answer.warnings.map((w) => el("li", {}, w.message)));
  $("estimates-warnings").hidden = !answer.warnings.length;
  $("estimates-section").dataset.ready = answer.selection.group_by;
}

async function labInit() {
  $("labels-annotator").value = labStore("annotator");
  $("labels-token").value = adminToken(); // from the served URL's ?token= (token.js), kept for this tab
  $("labels-annotator").addEventListener("change", () => { labStore("annotator", $("labels-annotator").value.trim()); labLoad().catch((e) => labMessage(e.message, true)); });
  $("labels-token").addEventListener("change", () => adminToken($("labels-token").value.trim()));
  $("labels-run").addEventListener("change", () => labDraws().catch((e) => labMessage(e.message, true)));
  $("labels-draw").addEventListener("change", () => labLoad().catch((e) => labMessage(e.message, true)));
  $("labels-topk").addEventListener("change", () => labLoad().catch((e) => labMessage(e.message, true)));
  $("labels-new-draw").addEventListener("click", labNewDraw);
  $("estimates-predictor").addEventListener("change", labEstimates);
  $("controls").addEventListener("change", labEstimates);
  document.addEventListener("keydown", labKeys);
  try { await labRuns(); } catch (err) { labMessage(err.message, true); }
  await labEstimates();
}

labInit();
