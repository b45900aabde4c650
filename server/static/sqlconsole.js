// Read-only SQL over the same guarded endpoint as the CLI and evaluators (POST /sql), and the
// named queries (POST /queries/{name}) with their declared charts rendered by Vega-Lite.
import { api } from "./api.js";
import { drawChart } from "./charts.js";
import { el, errorBox, table } from "./dom.js";

const EXAMPLE = "SELECT corpus, count(*) AS sessions, round(avg(duration_s)) AS mean_s\nFROM sessions GROUP BY corpus ORDER BY corpus";

export async function sqlView(root, { query }) {
  const queries = await api("/queries");
  const pick = el("select", { id: "named-query" }, el("option", { value: "" }, "ad-hoc SQL"),
    queries.map((q) => el("option", { value: q.name, title: q.description }, `${q.name}${q.chart ? " (chart)" : ""}`)));
  const sql = el("textarea", { id: "sql", spellcheck: "false" });
  sql.value = query.get("sql") || EXAMPLE;
  const params = el("div", { class: "toolbar", id: "query-params" });
  const about = el("p", { class: "muted", id: "query-about" });
  const status = el("span", { class: "muted", id: "sql-status" });
  const chart = el("div", { id: "chart" });
  const out = el("div", { class: "results", id: "sql-results" });
  const go = el("button", { class: "primary", id: "sql-run", onclick: () => run() }, "Run (Ctrl+Enter)");
  sql.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) run(); });
  root.append(el("h1", {}, "SQL"), el("div", { class: "toolbar" }, pick, go, status), about, params, sql, chart, out);

  let current = null;
  pick.addEventListener("change", () => select(pick.value));
  function select(name) {
    current = queries.find((q) => q.name === name) || null;
    params.replaceChildren();
    about.textContent = current ? current.description : "One read-only statement; graph patterns and primitives allowed. Rows are capped by the server's --max-rows.";
    sql.readOnly = !!current;
    if (!current) return;
    sql.value = `-- ${current.title}\n-- POST /queries/${current.name}`;
    for (const p of current.params) {
      params.append(el("label", { title: p.doc }, `${p.name} `,
        el("input", { name: p.name, size: 10, placeholder: p.type, value: p.default ?? "" })));
    }
  }
  if (query.get("query")) { pick.value = query.get("query"); select(pick.value); } else select("");

  async function run() {
    status.textContent = "running...";
    out.dataset.state = "loading";
    chart.replaceChildren();
    const t0 = performance.now();
    try {
      let res;
      if (current) {
        const values = {};
        for (const input of params.querySelectorAll("input")) if (input.value !== "") values[input.name] = input.value;
        res = await api(`/queries/${current.name}`, { method: "POST", body: { params: values } });
      } else {
        res = await api("/sql", { method: "POST", body: { sql: sql.value } });
      }
      status.textContent = `${res.rows.length} row(s)${res.truncated ? " (truncated)" : ""} in ${Math.round(performance.now() - t0)} ms · lake version ${res.lake_version}`;
      out.replaceChildren(table(res.columns, res.rows));
      if (current?.chart && res.rows.length) await drawChart(chart, current.chart, res);
    } catch (err) {
      status.textContent = "";
      out.replaceChildren(errorBox(err));
    }
    out.dataset.state = "ready";
  }

  if (query.get("run")) await run();
}
