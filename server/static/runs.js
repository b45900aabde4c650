// Evaluation runs kept in the lake (corpus evals): each model in each input condition side
// by side, overall (named query eval_runs) and class by class (eval_run_classes), each with
// its chart; a click on a run lists its predictions (eval_predictions), wrong ones first,
// each linked to the instance exactly as the model saw it (#/instance).
import { api } from "./api.js";
import { drawChart, records } from "./charts.js";
import { el, table } from "./dom.js";

const RUN_COLUMNS = ["model", "condition", "protocol", "saved_at", "n_scored", "n_instances",
                     "accuracy", "macro_f1", "macro_precision", "macro_recall", "mae", "exact"];
const CLASS_COLUMNS = ["protocol", "class", "model", "condition", "f1", "recall", "n_gold", "n_wrong"];

const named = (name, params) => api(`/queries/${name}`, { method: "POST", body: { params } });

/** Where the model's view of an instance opens: the protocol, condition and id it was run on,
 * and the run whose answer the preview shows. */
export function instanceHref(p, run) {
  const q = new URLSearchParams({ protocol: p.protocol, id: p.instance_id });
  if (p.condition) q.set("condition", p.condition);
  if (run) q.set("run", run);  // the preview says what this run answered
  return `#/instance?${q}`;
}

/** An ISO time to the minute, in the reader's zone ("2026-12-05 05:11"). */
function minute(iso) {
  const t = iso ? new Date(iso) : null;
  if (!t || Number.isNaN(t.getTime())) return iso;
  const p = (n) => String(n).padStart(2, "0");
  return `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())} ${p(t.getHours())}:${p(t.getMinutes())}`;
}

/** dom.js's table over records, in the named columns (saved_at to the minute), with
 * `row(r, tr)` to decorate each row. */
function recordTable(id, rows, columns, row = () => {}) {
  const t = table(columns, rows.map((r) => columns.map((c) => (c === "saved_at" ? minute(r[c]) : r[c]))));
  t.id = id;
  [...t.tBodies[0].rows].forEach((tr, i) => row(rows[i], tr));
  return t;
}

export async function runsView(root, { query }) {
  const [queries, benches] = await Promise.all([api("/queries"), api("/benchmarks")]);
  const chartOf = (name) => queries.find((q) => q.name === name)?.chart;
  const protocol = query.get("protocol") || "%";
  const pick = el("select", { id: "runs-protocol" }, el("option", { value: "%" }, "every protocol"),
    benches.items.map((b) => el("option", { value: b.id }, b.id)));
  pick.value = protocol;
  pick.addEventListener("change", () => { location.hash = `#/runs?protocol=${encodeURIComponent(pick.value)}`; });
  root.append(el("h1", {}, "Evaluation runs"), el("div", { class: "toolbar" }, el("label", {}, "protocol ", pick)));

  const [runsRes, classRes] = await Promise.all([named("eval_runs", { protocol }), named("eval_run_classes", { protocol })]);
  const runs = records(runsRes);
  if (!runs.length) {
    root.append(el("p", { class: "muted", id: "runs-empty" },
      "No evaluation run is kept in this lake yet. `graphlake bench score PROTOCOL PREDICTIONS.jsonl "
      + "--model NAME --condition C --save` keeps one (`--baseline majority` scores a baseline); an "
      + "inspect_ai log of the graphlake/bench task ingests as one (`graphlake ingest inspect LOG`)."));
    return null;
  }
  const views = [];
  const runsChart = el("div", { class: "chart", id: "runs-chart" });
  const classChart = el("div", { class: "chart", id: "classes-chart" });
  const preds = el("section", { id: "predictions" });
  let selected = null;
  const runsTable = recordTable("runs", runs, RUN_COLUMNS, (r, tr) => {
    tr.dataset.run = r.run_id;
    tr.className = "link";
    tr.title = `${r.run_name} · ${r.source}`;
    tr.addEventListener("click", () => showRun(r));
  });
  const classes = records(classRes);
  root.append(
    el("p", { class: "muted" }, "Each saved run of a model in an input condition, newest first (named "
      + "query eval_runs). Click a run for its predictions; a wrong answer links to what the model saw."),
    runsChart, runsTable,
    el("h2", {}, "Class by class"),
    ...(classes.length ? [classChart, recordTable("run-classes", classes, CLASS_COLUMNS)]
      : [el("p", { class: "muted" }, "These runs are of rating protocols: they have no classes.")]),
    preds);

  async function showRun(r) {
    selected = r.run_id;
    for (const tr of runsTable.querySelectorAll("tbody tr")) tr.classList.toggle("selected", tr.dataset.run === selected);
    const q = new URLSearchParams({ protocol, run: r.run_id });
    history.replaceState(null, "", `#/runs?${q}`);  // an address to come back to; no re-render
    preds.dataset.state = "loading";
    const res = await named("eval_predictions", { run: r.run_id });
    if (selected !== r.run_id) return;  // another run was clicked meanwhile
    const got = records(res);
    const wrong = got.filter((p) => p.outcome !== "right").length;
    const list = recordTable("predictions-table", got, ["instance_id", "outcome", "gold", "predicted", "answer"], (p, tr) => {
      tr.dataset.outcome = p.outcome;
      tr.classList.add(`outcome-${p.outcome}`);
      const first = tr.firstChild;
      first.replaceChildren(el("a", { href: instanceHref(p, r.run_id), title: "what the model saw" }, p.instance_id));
    });
    preds.replaceChildren(
      el("h2", {}, `${r.model || "unnamed model"} · ${r.condition || "no condition"} · ${r.protocol}`),
      el("p", { class: "muted", id: "predictions-about" },
        res.truncated  // the service's row cap: the rest are a query away (eval_predictions)
          ? `The first ${got.length} predictions (the service's row cap), ${wrong} of them wrong or invalid (listed first); `
            + `\`graphlake query run eval_predictions -p run=${r.run_id}\` lists them all.`
          : `${got.length} predictions, ${wrong} wrong or invalid (listed first).`),
      list);
    preds.dataset.state = "ready";
  }

  const want = query.get("run");
  const first = want ? runs.find((r) => r.run_id === want) : null;
  await Promise.all([
    chartOf("eval_runs") && drawChart(runsChart, chartOf("eval_runs"), runsRes).then((v) => views.push(v)),
    classes.length && chartOf("eval_run_classes")
      && drawChart(classChart, chartOf("eval_run_classes"), classRes).then((v) => views.push(v)),
    first ? showRun(first) : null,
  ]);
  return () => { for (const v of views) v.finalize(); };
}
