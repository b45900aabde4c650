// Frame search (what the screen showed) and text search (what was said or done), each hit a
// link to its moment on the session's timeline, where the recording seeks to it.
import { api, mediaUrl } from "./api.js";
import { clock, el, errorBox } from "./dom.js";

export async function searchView(root, { query }) {
  const q = el("input", { type: "search", id: "search-q", size: 40, value: query.get("q") || "",
                          placeholder: "e.g. the moment the architect opened Revit" });
  const mode = el("select", { id: "search-mode" }, el("option", { value: "frames" }, "frames (screen)"),
    el("option", { value: "text" }, "text (nodes and chat)"));
  mode.value = query.get("mode") || "frames";
  const corpus = el("input", { type: "text", id: "search-corpus", placeholder: "corpus (any)", size: 10 });
  const out = el("div", { id: "search-results" });
  const form = el("form", { class: "toolbar", onsubmit: (e) => { e.preventDefault(); run(); } },
    q, mode, corpus, el("button", { class: "primary", type: "submit", id: "search-go" }, "Search"));
  root.append(el("h1", {}, "Search"), form, out);

  async function run() {
    if (!q.value.trim()) return;
    out.replaceChildren(el("p", { class: "muted" }, "Searching..."));
    out.dataset.state = "loading";
    try {
      const page = await api(`/search/${mode.value}`, { params: { q: q.value, corpus: corpus.value, k: 24 } });
      out.replaceChildren(page.items.length
        ? el("div", { class: "hits" }, page.items.map((h) => hit(h, mode.value)))
        : el("p", { class: "muted" }, "Nothing found."));
    } catch (err) { out.replaceChildren(errorBox(err)); }
    out.dataset.state = "ready";
  }
  if (q.value) await run();
}

function hit(h, mode) {
  const at = h.t ?? 0;
  const params = new URLSearchParams({ t: String(at) });
  if (h.source === "node") params.set("node", h.ref_id);
  const target = `#/session/${encodeURIComponent(h.corpus)}/${encodeURIComponent(h.session_id)}?${params}`;
  return el("div", { class: "hit", dataset: { session: h.session_id, t: String(at) },
                     onclick: () => { location.hash = target; } },
    mode === "frames" ? el("img", { src: mediaUrl(h.thumbnail), alt: `frame at ${clock(at)}`, loading: "lazy" }) : null,
    el("div", {}, el("b", {}, `${h.session_id} @ ${clock(at)}`), " ",
      el("span", { class: "muted" }, `${h.step_id || ""} · score ${h.score.toFixed(3)} · ${h.matched.join("+")}`)),
    el("div", {}, (h.text || "").slice(0, 200)),
    h.nodes?.length ? el("div", { class: "muted" }, `running: ${h.nodes.join("; ").slice(0, 160)}`) : null);
}
