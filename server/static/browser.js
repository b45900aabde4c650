// Corpora and sessions with their metrics: filter, sort and page through /workbench/sessions.
import { api } from "./api.js";
import { clock, el, errorBox, fmt } from "./dom.js";

const COLUMNS = [
  ["session_id", "session"], ["corpus", "corpus"], ["title", "title"], ["domain", "domain"],
  ["condition", "condition"], ["duration_s", "duration"], ["n_nodes", "nodes"],
  ["n_responses", "responses"], ["burstiness", "B"], ["topology_w", "W"],
  ["retention_adopt", "R_A"], ["retention_modify", "R_M"],
  ["collaboration_rating", "collab."], ["output_quality_rating", "quality"],
  ["success", "pass/fail"],
];
const TITLES = {
  burstiness: "burstiness B (Kolab 4.2)", topology_w: "workflow topology W: branch nodes / edges",
  retention_adopt: "R_A: share of AI outputs adopted", retention_modify: "R_M: share modified",
  collaboration_rating: "mean collaboration rating", output_quality_rating: "mean output-quality rating",
  success: "agent traces: the run passed",
};
const PAGE = 25;

export async function browserView(root, { query }) {
  const state = {
    corpus: query.get("corpus") || "", q: query.get("q") || "", domain: "", success: "",
    sort: query.get("sort") || "session_id", order: query.get("order") || "asc",
    page: 0,  // the page shown (or being loaded)
    cursors: [null],  // cursors[k]: the cursor of page k, once page k - 1 has answered
  };
  let loads = 0;  // which load owns the table: an older answer that arrives late is dropped
  const corpora = await api("/corpora", { params: { limit: 100 } });
  const cards = el("div", { class: "cards", id: "corpora" });
  const drawCards = () => cards.replaceChildren(...corpora.items.map((c) => el("div", {
    class: `card${state.corpus === c.corpus ? " active" : ""}`, dataset: { corpus: c.corpus },
    onclick: () => { state.corpus = state.corpus === c.corpus ? "" : c.corpus; drawCards(); reload(); },
  }, el("b", {}, c.corpus), el("div", { class: "muted" },
    `${c.sessions} sessions · ${c.nodes} nodes · ${c.events} events`))));
  drawCards();

  const q = el("input", { type: "search", id: "filter-q", placeholder: "id, title or goal", value: state.q });
  const domain = el("input", { type: "text", id: "filter-domain", placeholder: "domain", size: 12 });
  const success = el("select", { id: "filter-success" }, el("option", { value: "" }, "any outcome"),
    el("option", { value: "true" }, "passed"), el("option", { value: "false" }, "failed"));
  // typing waits 250 ms for the next key; until then the table says "pending", not "ready",
  // even when an answer for an earlier prefix lands meanwhile
  let timer = null;
  const debounced = () => {
    clearTimeout(timer);
    out.dataset.state = "pending";
    timer = setTimeout(() => { timer = null; reload(); }, 250);
  };
  q.addEventListener("input", () => { state.q = q.value; debounced(); });
  domain.addEventListener("input", () => { state.domain = domain.value; debounced(); });
  success.addEventListener("change", () => { state.success = success.value; reload(); });

  const info = el("span", { class: "muted", id: "page-info" });
  // the page moves before anything is awaited, so clicks in a row each move it exactly once
  const prev = el("button", { id: "prev-page", onclick: () => {
    if (state.page > 0) { state.page -= 1; load(); } } }, "Previous");
  const next = el("button", { id: "next-page", onclick: () => {
    if (state.cursors[state.page + 1]) { state.page += 1; load(); } } }, "Next");
  const out = el("div", { class: "results", id: "sessions" });
  root.append(el("h1", {}, "Corpora"), cards,
    el("h2", {}, "Sessions"), el("div", { class: "toolbar" }, q, domain, success, prev, next, info), out);

  function reload() { state.page = 0; state.cursors = [null]; load(); }

  async function load() {
    const gen = ++loads;
    const at = state.page;
    prev.disabled = at === 0;
    next.disabled = true;  // until this page says whether there is a next one
    out.dataset.state = "loading";
    let page;
    try {
      page = await api("/workbench/sessions", { params: {
        corpus: state.corpus, q: state.q, domain: state.domain, success: state.success,
        sort: state.sort, order: state.order, limit: PAGE, cursor: state.cursors[at] } });
    } catch (err) {
      if (gen === loads && err.name !== "AbortError") out.replaceChildren(errorBox(err));
      return;
    }
    if (gen !== loads) return;
    state.cursors.length = at + 1;
    state.cursors.push(page.next_cursor);
    next.disabled = !page.next_cursor;
    out.dataset.state = timer === null ? "ready" : "pending";
    const last = page.offset + page.items.length;
    info.textContent = page.total ? `${page.offset + 1}-${last} of ${page.total}` : "no sessions match";
    body.replaceChildren(...page.items.map(sessionRow));
    if (table.parentNode !== out) out.replaceChildren(table);
  }

  // The header is built once and kept: a click marks the new order at once, and a second click
  // lands on the same element however late the first page answers.
  const headers = COLUMNS.map(([key, label]) => el("th", {
    class: "sortable", title: TITLES[key] || null, dataset: { sort: key },
    onclick: () => {
      state.order = state.sort === key && state.order === "asc" ? "desc" : "asc";
      state.sort = key; markSorted(); reload();
    },
  }, label));
  function markSorted() {
    headers.forEach((th) => {
      th.classList.toggle("sorted-asc", th.dataset.sort === state.sort && state.order === "asc");
      th.classList.toggle("sorted-desc", th.dataset.sort === state.sort && state.order === "desc");
    });
  }
  const body = el("tbody");
  const table = el("table", {}, el("thead", {}, el("tr", {}, headers)), body);
  markSorted();
  await load();
}

// A saved evaluation run (corpus evals, graphlake/protocols/saved_runs.py) is a session with
// no timeline: it opens in the runs view, with its predictions
const EVAL_CORPUS = "evals";

function sessionRow(r) {
  const href = r.corpus === EVAL_CORPUS
    ? `#/runs?${new URLSearchParams({ run: r.session_id })}`
    : `#/session/${encodeURIComponent(r.corpus)}/${encodeURIComponent(r.session_id)}`;
  return el("tr", {
    class: "link", dataset: { session: r.session_id, corpus: r.corpus },
    onclick: () => { location.hash = href; },
  }, COLUMNS.map(([key]) => cell(key, r[key], r)));
}

// One number format per column: counts as integers, shares and scores to 3 places,
// ratings (1-5 scales, averaged) to 2; a whole 1.0 in a column of shares reads 1.000.
const DIGITS = { n_nodes: 0, n_responses: 0, burstiness: 3, topology_w: 3, retention_adopt: 3,
  retention_modify: 3, collaboration_rating: 2, output_quality_rating: 2 };

function cell(key, v, r) {
  if (key === "session_id") {
    return el("td", {}, v, r.has_recording ? el("span", { class: "rec", title: "has a screen recording" }, " ● rec") : null);
  }
  if (key === "success") {
    return el("td", { class: v === null || v === undefined ? "" : v ? "pass" : "fail" },
      v === null || v === undefined ? "" : v ? "pass" : "fail");
  }
  if (key === "duration_s") return el("td", { class: "num" }, clock(v));
  if (key in DIGITS) return el("td", { class: "num" }, v === null || v === undefined ? "" : Number(v).toFixed(DIGITS[key]));
  return el("td", { class: typeof v === "number" ? "num" : null }, fmt(v, 3));
}
