// snapdp ui: the page (docs/ui.md). No framework, no build step, no network but its own server.
// Everything shown comes from the server's answers, written as text (never as HTML).
"use strict";

const TOKEN = new URLSearchParams(location.hash.slice(1)).get("token") || "";
const STATISTICS = ["count", "sum", "mean", "variance", "std", "var_samp", "std_samp", "quantiles"];
const TYPES = ["integer", "decimal", "text", "boolean", "date"];
const HOW = [["epsilon", "ε"], ["accuracy", "target ±"], ["weight", "weight"]];
const DEBOUNCE_MS = 250;

let doc = null;          // the page's document (every field a string, as typed)
let state = null;        // what the server fixed: source, ledger, output
let previewed = null;    // {digest, preview, ledger, document} of the last good preview
let seq = 0;             // only the latest preview request counts
let inflight = null;     // its AbortController
let timer = null;
let runNonce = null;     // one per visit of the run screen

const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

async function api(path, body, signal) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Snapdp-Token": TOKEN },
    body: JSON.stringify(body),
    signal,
    credentials: "omit",
    cache: "no-store",
  });
  let payload = null;
  try { payload = await response.json(); } catch (e) { payload = { error: { message: "no answer" } }; }
  return { status: response.status, ok: response.ok, payload };
}

// -- numbers for people -----------------------------------------------------------------------
function showEps(text) {
  if (text == null) return "—";
  if (String(text).includes("/")) {
    const [p, q] = String(text).split("/").map(Number);
    return "≈" + (p / q).toPrecision(6).replace(/\.?0+$/, "");
  }
  return String(text);
}
// δ is tiny: shown as 1e-6 (≈ when its exact value is a fraction such as 1/3000000).
function showDelta(text) {
  if (text == null || text === "") return "—";
  const x = Number(fraction(text).toPrecision(6));
  if (!isFinite(x)) return String(text);
  const s = x !== 0 && x < 1e-3 ? x.toExponential() : String(x);
  return (String(text).includes("/") ? "≈" : "") + s;
}
function showAcc(x) {
  if (x == null || !isFinite(x)) return "—";
  const a = Math.abs(x);
  const s = a >= 1e6 ? Math.round(x).toLocaleString("en-US")
    : Number(x.toPrecision(6)).toLocaleString("en-US", { maximumSignificantDigits: 6 });
  return "±" + s;
}

// -- rendering the editor -------------------------------------------------------------------
function input(field, value, attrs) {
  const node = el("input", Object.assign({ "data-field": field, "aria-label": field, autocomplete: "off", spellcheck: "false" }, attrs || {}));
  node.value = value;
  return node;
}
function select(field, value, options) {
  const node = el("select", { "data-field": field, "aria-label": field });
  for (const opt of options) {
    const [v, label] = Array.isArray(opt) ? opt : [opt, opt];
    node.append(el("option", { value: v }, label));
  }
  node.value = value;
  return node;
}
function cell(...children) { return el("td", {}, ...children); }

function renderColumns() {
  const body = $("columns").tBodies[0];
  body.replaceChildren();
  doc.columns.forEach((c, i) => {
    const p = `columns[${i}].`;
    body.append(el("tr", {},
      cell(input(p + "name", c.name, { placeholder: "name", list: "column-names" })),
      cell(select(p + "type", c.type, [["", "—"], ...TYPES])),
      cell(input(p + "lower", c.lower, { inputmode: "decimal" })),
      cell(input(p + "upper", c.upper, { inputmode: "decimal" })),
      cell(input(p + "keys", c.keys, { placeholder: "e.g. 0, 1" })),
      cell(input(p + "bins", c.bins, { placeholder: "e.g. 0, 18, 65, 101" })),
      cell(el("button", { type: "button", class: "remove", title: "remove column",
        onclick: () => { doc.columns.splice(i, 1); renderAll(); schedule(); } }, "×"))));
  });
  const names = $("column-names");
  const known = new Set([...(state && state.header ? state.header : []), ...doc.columns.map((c) => c.name).filter(Boolean)]);
  names.replaceChildren(...[...known].map((n) => el("option", { value: n })));
}

function renderQueries() {
  const body = $("queries").tBodies[0];
  body.replaceChildren();
  doc.queries.forEach((q, i) => {
    const p = `query[${i + 1}].`;
    body.append(el("tr", { "data-query": String(i) },
      el("td", { class: "num", title: q.name ? "name: " + q.name : "" }, String(i + 1)),
      cell(select(p + "statistic", q.statistic, [["", "—"], ...STATISTICS]), gridBox(p, q)),
      cell(input(p + "column", q.column, { list: "column-names", placeholder: q.statistic === "count" ? "(none)" : "column" })),
      cell(input(p + "by", q.by, { list: "column-names", placeholder: "e.g. sex, educ" })),
      cell(input(p + "bins", q.bins, { placeholder: "edges" })),
      cell(input(p + "quantiles", q.quantiles, { placeholder: q.statistic === "quantiles" ? "0.25, 0.5, 0.75" : "" })),
      cell(input(p + "where", q.where || "", { placeholder: "e.g. age >= 18", class: "wide" })),
      cell(input(p + "group_size", q.group_size || "", { inputmode: "numeric", placeholder: doc.data.group_size || "" })),
      cell(select(p + "how", q.how, HOW)),
      cell(input(p + "value", q.value, { inputmode: "decimal" })),
      el("td", { class: "out", "data-out": "epsilon" }, "—"),
      el("td", { class: "out", "data-out": "accuracy" }, "—"),
      cell(el("button", { type: "button", class: "remove", title: "remove query",
        onclick: () => { doc.queries.splice(i, 1); renderAll(); schedule(); } }, "×"))));
    body.append(el("tr", { class: "flags", "data-flags": String(i) }, el("td", { colspan: "13" })));
  });
}

// A count may keep its grid value instead of the nearest integer (docs/utility.md, "Integer counts").
function gridBox(p, q) {
  const box = el("input", { type: "checkbox", "data-field": p + "grid_counts", "aria-label": p + "grid_counts" });
  box.checked = q.grid_counts === "true";
  return el("label", { class: "grid-counts" + (q.statistic === "count" ? "" : " hidden"),
    title: "keep the count's grid value (e.g. 2000.125) instead of rounding it to an integer" }, box, " grid value");
}

function renderData() {
  for (const node of document.querySelectorAll("#plan-screen .grid [data-field]")) {
    node.value = doc.data[node.dataset.field.slice(5)] || "";
  }
}

function renderAll() { renderData(); renderColumns(); renderQueries(); showDeltaField(); showPreview(previewed, true); }

// -- groups from the data (docs/ui.md, "Groups from the data") ---------------------------------
function listOf(text) {
  const t = (text || "").trim();
  if (!t) return [];
  if (t.startsWith("[")) { try { const v = JSON.parse(t); if (Array.isArray(v)) return v.map(String); } catch (e) { /* as typed */ } }
  return t.split(",").map((x) => x.trim()).filter(Boolean);
}
// A query's grouping columns declared without keys or bins (and not binned by the query):
// their groups come from the data, chosen privately with δ. Read from the page's fields only.
function fromData(q) {
  const by = listOf(q.by);
  const bins = (q.bins || "").trim();
  const binned = new Set(!bins ? [] : bins.includes(":")
    ? bins.split(";").map((part) => part.split(":")[0].trim()) : by.slice(0, 1));
  return by.filter((name) => {
    const c = doc.columns.find((col) => col.name === name);
    return c && !binned.has(name) && !(c.keys || "").trim() && !(c.bins || "").trim();
  });
}
// δ is asked for where it matters: when a query groups by such a column, or one is typed.
function showDeltaField() {
  const needed = doc.queries.some((q) => fromData(q).length > 0);
  $("delta-field").classList.toggle("hidden", !needed && !(doc.data.delta || "").trim());
}

// -- editing --------------------------------------------------------------------------------
function setField(field, value) {
  let m;
  if ((m = field.match(/^data\.(\w+)$/))) doc.data[m[1]] = value;
  else if ((m = field.match(/^columns\[(\d+)\]\.(\w+)$/))) doc.columns[+m[1]][m[2]] = value;
  else if ((m = field.match(/^query\[(\d+)\]\.(\w+)$/))) doc.queries[+m[1] - 1][m[2]] = value;
}

function getField(field) {
  let m;
  if ((m = field.match(/^data\.(\w+)$/))) return doc.data[m[1]];
  if ((m = field.match(/^columns\[(\d+)\]\.(\w+)$/))) return (doc.columns[+m[1]] || {})[m[2]];
  if ((m = field.match(/^query\[(\d+)\]\.(\w+)$/))) return (doc.queries[+m[1] - 1] || {})[m[2]];
  return undefined;
}
let lastSizes = null;
function onEdit(event) {
  const field = event.target.dataset && event.target.dataset.field;
  if (!field) return;
  // a "change" after "input" changes nothing: planning again would disable "Review and run"
  // under the pointer of a user who clicks it straight after typing
  if (field === "sizes") { if (event.target.value === lastSizes) return; lastSizes = event.target.value; }
  const value = event.target.type === "checkbox" ? (event.target.checked ? "true" : "") : event.target.value;
  if (field !== "sizes" && (getField(field) || "") === value) return;
  setField(field, value);
  if (/\.statistic$/.test(field)) {
    const box = document.querySelector(`[data-field="${field.replace("statistic", "grid_counts")}"]`);
    if (box) box.parentElement.classList.toggle("hidden", value !== "count");
  }
  if (field === "data.total_epsilon") showBand(event.target.value.trim() || null);
  if (/\.name$/.test(field)) renderColumnsDatalist();
  showDeltaField();
  schedule();
}
function renderColumnsDatalist() {
  const known = new Set([...(state.header || []), ...doc.columns.map((c) => c.name).filter(Boolean)]);
  $("column-names").replaceChildren(...[...known].map((n) => el("option", { value: n })));
}

function schedule() {
  clearTimeout(timer);
  setStatus("planning…", "busy");
  markStale();
  timer = setTimeout(plan, DEBOUNCE_MS);
}

async function plan() {
  const mine = ++seq;
  if (inflight) inflight.abort();
  inflight = new AbortController();
  const sent = JSON.parse(JSON.stringify(doc));
  let answer;
  try {
    answer = await api("/api/preview", { document: sent, sizes: $("group-sizes").value }, inflight.signal);
  } catch (e) {
    if (e.name === "AbortError") return;
    if (mine === seq) setStatus("the server does not answer (is snapdp ui still running?)", "bad");
    return;
  }
  if (mine !== seq) return;  // a newer request is on its way: this answer is stale
  inflight = null;
  if (answer.payload && answer.payload.superseded) { schedule(); return; }  // another tab's newer request
  clearErrors();
  if (answer.ok) {
    previewed = Object.assign({ document: sent }, answer.payload);
    showPreview(previewed, false);
    setStatus("planned · nothing spent", "");
  } else {
    previewed = null;
    showError(answer.payload.error || { message: "error" });
    setStatus("the plan has an error", "bad");
    $("to-run").disabled = true;
  }
}

// -- showing the planner's answer -------------------------------------------------------------
function markStale() {
  for (const td of document.querySelectorAll("td.out")) td.classList.add("stale");
  $("to-run").disabled = true;
}

function showPreview(p, staleOnly) {
  const rows = document.querySelectorAll("#queries tr[data-query]");
  if (!p) { markStale(); return; }
  const qs = p.preview.queries;
  rows.forEach((tr, i) => {
    const q = qs[i];
    const eps = tr.querySelector('[data-out="epsilon"]');
    const acc = tr.querySelector('[data-out="accuracy"]');
    eps.textContent = q ? (q.two_phase ? "≤ " + showEps(q.two_phase.cap) : showEps(q.epsilon)) : "—";
    eps.title = q ? (q.two_phase ? "two-phase: spends what its smallest group needs, at most " + q.two_phase.cap : "exact ε = " + q.epsilon) : "";
    acc.textContent = accuracyText(q);
    acc.title = q ? `at confidence ${q.confidence}` + (q.group_size ? `, for a group of ${q.group_size.toLocaleString("en-US")} rows` : "") : "";
    eps.classList.toggle("stale", !!staleOnly);
    acc.classList.toggle("stale", !!staleOnly);
    const flagCell = document.querySelector(`tr[data-flags="${i}"] td`);
    const notes = ((q && q.flags) || []).map((f) => el("span", { class: "flag" }, "⚠ " + f));
    if (q && q.two_phase) notes.unshift(...twoPhaseNotes(q));
    if (q && q.from_data && q.from_data.length) notes.unshift(fromDataNote(q, p.preview.delta));
    flagCell.replaceChildren(...notes);
  });
  const used = p.preview.total_epsilon_used, cap = p.preview.total_epsilon;
  $("total-used").textContent = totalText(p.preview);
  $("total-used").title = "exact: " + used;
  $("total-cap").textContent = cap ? `of ${showEps(cap)}` : "(no cap declared)";
  const frac = cap ? Math.min(1, fraction(used) / fraction(cap)) : 0;
  $("meter-bar").style.width = (100 * frac).toFixed(1) + "%";
  const dp = $("total-delta");
  dp.classList.toggle("hidden", p.preview.delta == null);
  dp.textContent = p.preview.delta == null ? "" : `· (ε, δ)-DP: δ = ${showDelta(p.preview.delta)} for the groups chosen from the data`;
  dp.title = p.preview.delta == null ? "" : "exact δ = " + p.preview.delta + ", plus the snapping mechanism's own tiny δ";
  $("assumptions").replaceChildren(...p.preview.assumptions.map((a) => el("li", {}, "assumes " + a)));
  showLedger(p.ledger, used);
  showBand(cap || used);
  const refused = !!(p.ledger && (p.ledger.short || p.ledger.error || p.ledger.delta_error));
  $("to-run").disabled = !!staleOnly || !(state && state.can_run) || refused;
  $("to-run").title = !(state && state.can_run) ? "start snapdp ui with a source and --ledger to run"
    : refused ? "the ledger would refuse this run: " + ledgerText(p.ledger, used) : "";
}

// The total: a two-phase query spends what its smallest group needs, up to its cap.
function totalText(pv) {
  const twoPhase = pv.queries.some((q) => q.two_phase);
  if (!twoPhase) return showEps(pv.total_epsilon_used);
  const fixed = fraction(pv.fixed_epsilon || "0"), used = fraction(pv.total_epsilon_used);
  const up = Number((used - fixed).toPrecision(6));
  return (fixed > 0 ? showEps(pv.fixed_epsilon) + " + " : "") + "up to " + up + " (two-phase targets)";
}

// A query whose groups come from the data: which columns, and the δ of their choice.
function fromDataNote(q, delta) {
  return el("span", { class: "note", "data-note": "from-data" },
    `groups of ${q.from_data.join(", ")} come from the data: a group is shown only when its noisy count passes a threshold — (ε, δ)-DP with δ = ${showDelta(delta)}`);
}

// Per two-phase query: what it would spend and reach for the group sizes the user set.
function twoPhaseNotes(q) {
  const tp = q.two_phase;
  const out = [];
  const target = showAcc(q.target);
  if (tp.out_of_reach) {
    const where = tp.floor == null ? "at any group size under its cap"
      : `unless its smallest group has ${Number(tp.floor).toLocaleString("en-US")}+ rows (more than ${Number(tp.realistic_rows).toLocaleString("en-US")})`;
    out.push(el("span", { class: "flag out-of-reach" }, `⚠ target ${target} is out of reach ${where}: raise the total ε or the target`));
  } else if (tp.floor != null) {
    out.push(el("span", { class: "note" }, `two-phase: target ${target} met when the smallest group has ${Number(tp.floor).toLocaleString("en-US")}+ rows`));
  }
  for (const s of tp.sizes || []) {
    out.push(el("span", { class: "size " + (s.met ? "met" : "missed") },
      `groups of ${Number(s.rows).toLocaleString("en-US")}: ε ${showEps(s.epsilon)} → ${showAcc(s.accuracy)} ${s.met ? "✓" : "✗"}`));
  }
  return out;
}

// How much protection the total ε gives, in plain words (docs/ui.md, "What ε and ± mean").
function showBand(text) {
  const band = $("eps-band");
  const e = text == null ? NaN : fraction(text);
  band.className = "band";
  if (!isFinite(e)) { band.classList.add("hidden"); return; }
  const times = Math.exp(Math.min(e, 700));
  const odds = times < 1e6 ? Number(times.toPrecision(3)).toLocaleString("en-US") : times.toExponential(1);
  let level, words;
  if (e <= 1) { level = "strong"; words = "strong protection"; }
  else if (e <= 5) { level = "moderate"; words = "moderate protection"; }
  else { level = "weak"; words = "weak protection: a person in the data is barely protected"; }
  band.classList.add(level);
  band.textContent = `Total ε = ${showEps(text)}: ${words}. Whatever anyone concludes about one person from all these results is at most ${odds}× more likely than had that person not been in the data.`;
}

function accuracyText(q) {
  if (!q) return "—";
  if (q.two_phase) {
    const sizes = q.two_phase.sizes || [];
    const best = sizes.find((s) => s.met);
    if (q.two_phase.out_of_reach || !best) return `target ${showAcc(q.target)}: out of reach`;
    return `target ${showAcc(q.target)}, met from ${Number(q.two_phase.floor).toLocaleString("en-US")} rows`;
  }
  if (q.accuracy != null) return showAcc(q.accuracy);
  if (q.accuracy_text) return q.accuracy_text;
  if (q.target != null) return "target " + showAcc(q.target);
  return "—";
}

function fraction(text) {
  const s = String(text);
  if (s.includes("/")) { const [a, b] = s.split("/").map(Number); return a / b; }
  return Number(s);
}

function ledgerText(l, used) {
  if (!l) return "";
  if (l.error) return l.error;
  const start = l.new ? `new budget, total ε ${showEps(l.total)}` : `spent ${showEps(l.spent)} of ${showEps(l.total)}, remaining ${showEps(l.remaining)}`;
  const delta = l.delta_error ? ` · δ: ${l.delta_error}`
    : l.total_delta != null ? ` · δ budget ${showDelta(l.total_delta)}, spent ${showDelta(l.delta_spent)}` : "";
  if (used == null) return start + delta;
  return start + (l.short ? ` — this run needs ${showEps(used)}: it would be refused` : ` — this run would leave ${showEps(l.after)}`) + delta;
}
function showLedger(l, used) {
  const line = $("ledger-line");
  line.textContent = l ? "Ledger: " + ledgerText(l, used) : "";
  line.classList.toggle("bad", !!(l && (l.short || l.error || l.delta_error)));
}

// -- errors next to their field ---------------------------------------------------------------
function clearErrors() {
  for (const node of document.querySelectorAll(".invalid")) node.classList.remove("invalid");
  for (const node of document.querySelectorAll(".field-error.inline")) node.remove();
  $("queries-error").classList.add("hidden");
  $("banner").classList.add("hidden");
}
function showError(error) {
  const target = error.field ? document.querySelector(`#plan-screen [data-field="${CSS.escape(error.field)}"]`) : null;
  if (target) {
    target.classList.add("invalid");
    const note = el("div", { class: "field-error inline", role: "alert" }, error.message);
    target.insertAdjacentElement("afterend", note);
  } else {
    const box = $("queries-error");
    box.textContent = error.message;
    box.classList.remove("hidden");
  }
}
function banner(message) {
  $("banner").textContent = message;
  $("banner").classList.remove("hidden");
}
function setStatus(text, kind) {
  const s = $("status");
  s.textContent = text;
  s.className = "status " + (kind || "");
}

// -- export and load --------------------------------------------------------------------------
async function exportPlan(format) {
  const answer = await api("/api/export", { document: doc, format: format || "toml" });
  if (!answer.ok) { clearErrors(); showError(answer.payload.error); return; }
  const blob = new Blob([answer.payload.text], { type: "text/plain" });
  const a = el("a", { href: URL.createObjectURL(blob), download: answer.payload.filename });
  document.body.append(a);
  a.click();
  a.remove();
}
async function loadPlan(event) {
  const file = event.target.files[0];
  event.target.value = "";
  if (!file) return;
  const text = await file.text();
  const answer = await api("/api/load", { toml: text });
  if (!answer.ok) { banner(`${file.name}: ${answer.payload.error.message}`); return; }
  doc = answer.payload.document;
  previewed = null;
  renderAll();
  schedule();
}
async function readHeader() {
  const answer = await api("/api/header", { document: doc });
  if (!answer.ok) { banner(answer.payload.error.message); return; }
  state.header = answer.payload.columns;
  renderColumnsDatalist();
  const have = new Set(doc.columns.map((c) => c.name));
  for (const name of state.header) {
    if (!have.has(name)) doc.columns.push({ name, type: "", lower: "", upper: "", keys: "", bins: "" });
  }
  renderAll();
  schedule();
}

// How the source is read: the owner's, shown read-only (docs/ui.md, "How the source is read").
function csvText(csv) {
  if (!csv) return "—";
  const delimiter = csv.delimiter === "\t" ? "tab" : `"${csv.delimiter}"`;
  const header = csv.header ? "first line names the columns"
    : "no header line; columns " + (csv.column_names || []).join(", ");
  return `${header} · delimiter ${delimiter} · ${csv.encoding} (set by the data owner)`;
}

// -- start --------------------------------------------------------------------------------------
async function start() {
  if (!TOKEN) { banner("This page needs the address snapdp ui printed (with its #token=…)."); return; }
  const answer = await api("/api/state", {});
  if (!answer.ok) { banner(answer.payload.error.message); return; }
  state = answer.payload;
  state.header = [];
  doc = state.document;
  $("source-name").textContent = state.source || "none (start snapdp ui with --source to run)";
  $("ledger-name").textContent = state.ledger || "none (start snapdp ui with --ledger to run)";
  $("output-name").textContent = state.output;
  $("csv-name").textContent = csvText(state.csv);
  $("read-header").disabled = !state.source;
  $("plan-screen").addEventListener("input", onEdit);
  $("plan-screen").addEventListener("change", onEdit);
  $("add-column").addEventListener("click", () => {
    doc.columns.push({ name: "", type: "integer", lower: "", upper: "", keys: "", bins: "" });
    renderAll();
  });
  $("add-query").addEventListener("click", () => {
    doc.queries.push({ statistic: "count", column: "", by: "", bins: "", quantiles: "", where: "", group_size: "", grid_counts: "", how: "weight", value: "1" });
    renderAll();
    schedule();
  });
  $("export").addEventListener("click", () => exportPlan("toml"));
  $("export-python").addEventListener("click", () => exportPlan("python"));
  $("export-notebook").addEventListener("click", () => exportPlan("notebook"));
  $("load").addEventListener("change", loadPlan);
  $("read-header").addEventListener("click", readHeader);
  $("to-run").addEventListener("click", toRun);
  $("back").addEventListener("click", back);
  $("run").addEventListener("click", run);
  renderAll();
  schedule();
}

document.addEventListener("DOMContentLoaded", start);
