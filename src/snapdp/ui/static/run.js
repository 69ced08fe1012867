// snapdp ui: the run screen and the results (docs/ui.md, "Running"). Loaded after app.js, whose
// helpers (el, api, showEps, showAcc, ledgerText, setStatus) it uses.
"use strict";

// -- the run screen -----------------------------------------------------------------------------
function randomNonce() {
  const bytes = new Uint8Array(24);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
function toRun() {
  if (!previewed) return;
  runNonce = randomNonce();
  $("plan-screen").classList.add("hidden");
  $("run-screen").classList.remove("hidden");
  $("results-card").classList.add("hidden");
  $("run-error").classList.add("hidden");
  $("run").disabled = false;
  $("run").textContent = "Run and spend ε";
  const delta = previewed.preview.delta;
  $("run-total").textContent = (previewed.preview.total_is_cap ? "at most ε = " : "ε = ") + showEps(previewed.preview.total_epsilon_used)
    + (delta == null ? "" : ` and δ = ${showDelta(delta)} for the groups chosen from the data: (ε, δ)-DP`);
  $("run-source").textContent = state.source || "—";
  $("run-ledger").textContent = ledgerText(previewed.ledger, previewed.preview.total_epsilon_used) || "—";
  const body = $("run-plan").tBodies[0];
  body.replaceChildren(...previewed.preview.queries.map((q) =>
    el("tr", {}, el("td", {}, q.query), el("td", {}, (q.two_phase ? "at most " + showEps(q.two_phase.cap) : showEps(q.epsilon))
      + (q.from_data && q.from_data.length ? `, δ = ${showDelta(delta)}: (ε, δ)-DP` : "")), el("td", {}, accuracyText(q)))));
}
function back() {
  runNonce = null;
  $("run-screen").classList.add("hidden");
  $("plan-screen").classList.remove("hidden");
  schedule();
}
async function run() {
  $("run").disabled = true;
  $("run-error").classList.add("hidden");
  setStatus("running…", "busy");
  const watch = watchProgress(runNonce);
  let answer;
  try {
    answer = await api("/api/run", { document: previewed.document, digest: previewed.digest, nonce: runNonce });
  } catch (e) {
    answer = { ok: false, payload: { error: { message: "the server does not answer" } } };
  }
  watch.stop();
  if (!answer.ok) {
    $("run-error").textContent = answer.payload.error.message;
    $("run-error").classList.remove("hidden");
    $("run").disabled = false;  // trying again re-sends the same nonce: refused, never spent twice
    setStatus("not run", "bad");
    return;
  }
  setStatus("released · ε spent", "");
  $("run-ledger").textContent = ledgerText(answer.payload.ledger, null);
  showResults(answer.payload);
  $("run").textContent = "Released ✓";  // this nonce is used: a second click would be refused
}

// A run over a second shows how far it got: "step 4 of 6 · phase two of mean(income) by region".
// The steps are counted from the plan alone, never from the data (docs/ui.md, "Running").
const PROGRESS_AFTER_MS = 1000, PROGRESS_EVERY_MS = 400;
function progressText(e) {
  if (!e) return "";
  if (e.label === "done") return `step ${e.total} of ${e.total} · done`;
  return `running · step ${Math.min(e.done + 1, e.total)} of ${e.total} · ${e.label}`;
}
function watchProgress(nonce) {
  const line = $("run-progress");
  let stopped = false, timer = null;
  const poll = async () => {
    if (stopped) return;
    let answer = null;
    try { answer = await api("/api/progress", { nonce }); } catch (e) { answer = null; }
    if (stopped) return;
    const events = (answer && answer.ok && answer.payload.events) || [];
    if (events.length) {
      line.textContent = progressText(events[events.length - 1]);
      line.classList.remove("hidden");
    }
    timer = setTimeout(poll, PROGRESS_EVERY_MS);
  };
  timer = setTimeout(poll, PROGRESS_AFTER_MS);
  return { stop() { stopped = true; clearTimeout(timer); line.classList.add("hidden"); } };
}

// A result's notes in plain words, each with its docs page; the exact statement under "details".
function noteNodes(q) {
  const notes = q.plain_notes || [];
  if (!notes.length) return [];
  const seen = new Set();
  const shown = notes.filter((n) => !seen.has(n.text) && seen.add(n.text));  // one line per text
  return [el("div", { class: "notes" }, el("h4", {}, "About these numbers"),
    el("ul", {}, ...shown.map((n) => el("li", { "data-note": n.kind }, n.text, " ",
      el("a", { href: "/help#" + n.help, target: "_blank", rel: "noopener noreferrer", class: "doc" }, "More: " + n.doc))))),
    el("details", { class: "meta" }, el("summary", {}, "details"), ...notes.map((n) => el("div", {}, n.details)))];
}

function showResults(r) {
  $("results-card").classList.remove("hidden");
  const anyFromData = r.results.some((q) => q.from_data && q.from_data.length);
  const deltaSpent = anyFromData ? ` · δ spent: ${showDelta(String(r.delta_spent))}` : "";
  $("results-meta").textContent = `ε spent: ${showEps(r.epsilon_spent)}${deltaSpent} · ledger: ${ledgerText(r.ledger, null)} · written to ${r.folder}`;
  const links = $("results-links");
  links.replaceChildren();
  for (const [name, href] of Object.entries(r.files)) {
    links.append(el("a", { href, target: "_blank", rel: "noopener noreferrer", class: "button quiet" }, name), " ");
  }
  const box = $("results");
  box.replaceChildren();
  for (const q of r.results) {
    const keys = q.by || [];
    const head = el("tr", {}, ...keys.map((k) => el("th", {}, k)),
      ...(q.quantile ? [el("th", {}, "quantile")] : []), el("th", {}, "value"), el("th", {}, "±"));
    const rows = q.value.map((v, i) => el("tr", {},
      ...keys.map((k) => el("td", {}, String(q.keys[k][i]))),
      ...(q.quantile ? [el("td", {}, String(q.quantile[i]))] : []),
      el("td", {}, v == null ? "—" : Number(v).toLocaleString("en-US", { maximumFractionDigits: 4 })),
      el("td", {}, showAcc(q.accuracy[i]))));
    const verdict = q.target_met == null ? [] : [el("div", { class: "verdict " + (q.target_met ? "met" : "missed"), "data-verdict": q.target_met ? "met" : "missed" },
      q.target_met ? "✓ target met" : "✗ " + (q.target && /^target missed/.test(q.target) ? q.target : "target missed" + (q.target ? ": " + q.target : "")))];
    const pct = Math.round(100 * q.confidence);
    const fromData = q.from_data && q.from_data.length;
    const guarantee = (fromData
      ? `(ε, δ)-DP: ε = ${showEps(q.epsilon)}, δ = ${showDelta(String(q.delta))} · groups of ${q.from_data.join(", ")} chosen from the data (a group is shown only when its noisy count passes a threshold)`
      : `ε = ${showEps(q.epsilon)}`) + ` · each value is within its ± of the true one with probability ${pct}%`;
    const notes = noteNodes(q);
    box.append(el("div", { class: "result" },
      el("h3", {}, q.query),
      ...verdict,
      el("div", { class: "meta", "data-guarantee": fromData ? "epsilon-delta" : "epsilon" }, guarantee),
      el("table", { class: "plain" }, el("thead", {}, head), el("tbody", {}, ...rows)),
      ...notes));
  }
}

