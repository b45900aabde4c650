// Small DOM helpers: build elements from data without innerHTML, so lake text is never markup.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

/** Seconds from the session start as H:MM:SS (Kolab's clock). */
export function clock(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "";
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return `${h}:${String(m).padStart(2, "0")}:${String(r).padStart(2, "0")}`;
}

export function fmt(v, digits = 2) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(digits);
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** How many decimals a column of numbers shows: none when every number in it is whole, else
 * 3 for all of them (so 1 and 0.25 in one column read 1.000 and 0.250, aligned). */
export function columnDigits(rows, k) {
  return rows.every((r) => typeof r[k] !== "number" || Number.isInteger(r[k])) ? 0 : 3;
}

/** A plain table: column names and rows as arrays (the shape of a /sql answer). */
export function table(columns, rows) {
  const digits = columns.map((_, k) => columnDigits(rows, k));
  const body = el("tbody", {}, rows.map((r) => el("tr", {}, r.map((v, k) =>
    el("td", { class: typeof v === "number" ? "num" : null },
      typeof v === "number" ? v.toFixed(digits[k]) : fmt(v, 3))))));
  return el("table", {}, el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c)))), body);
}

export function errorBox(err) {
  return el("p", { class: "error", role: "alert" }, err.message || String(err));
}
