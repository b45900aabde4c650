// Agent traces as a trace viewer draws them: every span under its parent (the lake's `parent`
// edges), indented by depth, with a bar for its time within the trace. A row folds and
// unfolds its children; `open(node)` unfolds the path to a span, marks it and scrolls to it,
// so a click on the timeline opens the tree on that span.
import { clock, el } from "./dom.js";

const ACTOR_FILL = { human: "#57606a", ai: "#0969da", agent: "#0969da", tool: "#9a6700", system: "#6e7781" };

/** The tree of `data`'s spans, or null when the session has no parent edges. */
export function spanTree(data, { onSpan } = {}) {
  const parentEdges = data.edges.filter((e) => e.kind === "parent");
  if (!parentEdges.length) return null;
  const occ = data.occurrences;
  const first = new Map();  // node_id -> its first occurrence
  for (let i = 0; i < occ.node_id.length; i++) if (!first.has(occ.node_id[i])) first.set(occ.node_id[i], i);
  const parent = new Map(), children = new Map();
  for (const e of parentEdges) {
    if (!first.has(e.src) || !first.has(e.dst) || parent.has(e.dst)) continue;
    parent.set(e.dst, e.src);
    if (!children.has(e.src)) children.set(e.src, []);
    children.get(e.src).push(e.dst);
  }
  const start = (n) => occ.t_start[first.get(n)];
  for (const list of children.values()) list.sort((a, b) => start(a) - start(b));
  const roots = [...first.keys()].filter((n) => !parent.has(n) && children.has(n)).sort((a, b) => start(a) - start(b));
  const span = Math.max(1e-9, data.duration_s);
  const rows = new Map();  // node_id -> row element
  const folded = new Set();
  const element = el("div", { id: "span-tree", role: "tree", "aria-label": "spans by parent" });

  function visible(n) {
    for (let p = parent.get(n); p !== undefined; p = parent.get(p)) if (folded.has(p)) return false;
    return true;
  }
  function refresh() {
    for (const [n, row] of rows) {
      row.classList.toggle("hidden", !visible(n));
      const t = row.querySelector(".span-toggle");
      if (children.has(n)) t.textContent = folded.has(n) ? "▸" : "▾";
    }
  }
  function add(n, depth) {
    const i = first.get(n);
    const t0 = occ.t_start[i], t1 = occ.t_end[i] ?? t0;
    const toggle = el("span", { class: "span-toggle" }, "");
    toggle.addEventListener("click", (ev) => {
      ev.stopPropagation();
      if (folded.has(n)) folded.delete(n); else folded.add(n);
      refresh();
    });
    const row = el("div", { class: "span-row", role: "treeitem", dataset: { node: n, depth: String(depth) },
      title: `${occ.label[i] || n} · ${occ.actor[i] || occ.actor_type[i]} · ${clock(t0)}, ${(t1 - t0).toFixed(3)} s`,
      onclick: () => onSpan && onSpan(n) },
      el("div", { class: "span-name", style: `padding-left:${6 + depth * 14}px` }, toggle,
        occ.label[i] || n, el("span", { class: "muted" }, ` ${occ.actor[i] || ""}`)),
      el("div", { class: "span-track" }, el("div", { class: "span-bar", style:
        `left:${(100 * t0) / span}%;width:${(100 * Math.max(0, t1 - t0)) / span}%;`
        + `background:${ACTOR_FILL[occ.actor_type[i]] || "#6e7781"}` })));
    rows.set(n, row);
    element.append(row);
    for (const c of children.get(n) || []) add(c, depth + 1);
  }
  for (const r of roots) add(r, 0);
  // spans below the top level start folded, so a long trace starts short; open() unfolds
  for (const [n, row] of rows) if (Number(row.dataset.depth) >= 1 && children.has(n)) folded.add(n);
  refresh();

  return {
    element,
    /** Unfold the path to `node`, mark its row and scroll it into view (a span not in the
     * tree leaves the tree as it is). */
    open(node) {
      const row = rows.get(node);
      for (const r of rows.values()) r.classList.toggle("selected", r === row);
      if (!row) return;
      for (let p = parent.get(node); p !== undefined; p = parent.get(p)) folded.delete(p);
      refresh();
      row.scrollIntoView({ block: "nearest" });
    },
    /** The node ids of the rows shown, top to bottom. */
    shown() { return [...rows].filter(([n]) => visible(n)).map(([n]) => n); },
  };
}
