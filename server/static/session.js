// One session: metrics, the timeline, the recording kept in sync with it, and the detail pane
// of the node last clicked (its fields, the chat turn before it, its adoption chain, frames).
import { api, mediaUrl } from "./api.js";
import { clock, el, errorBox, fmt } from "./dom.js";
import { spanTree } from "./spantree.js";
import { createTimeline, eventColor, LABEL_COLORS } from "./timeline.js";

/** The adoption chain through `node`: up through requests that were earlier responses to the
 * chain's start, then down through every triple of those requests (the adoption_chains view's
 * rule, queries/views/adoption_chains.sql). */
export function adoptionChain(adoptions, node) {
  const touching = adoptions.filter((a) => a.source_node === node || a.ai_node === node || a.response_node === node);
  if (!touching.length) return { nodes: new Set(), triples: [] };
  const roots = new Set();
  for (const t of touching) {
    let start = t.source_node ?? t.ai_node;
    const seen = new Set();
    for (;;) {
      const parent = adoptions.find((a) => a.response_node === start && a.source_node && !seen.has(a.annotation_id));
      if (!parent) break;
      seen.add(parent.annotation_id);
      start = parent.source_node;
    }
    roots.add(start);
  }
  const requests = new Set(roots), taken = new Set(), triples = [];
  let grew = true;
  while (grew) {
    grew = false;
    for (const a of adoptions) {
      if (taken.has(a)) continue;
      if (requests.has(a.source_node) || (!a.source_node && requests.has(a.ai_node))) {
        taken.add(a); triples.push(a); grew = true;
        if (a.response_node) requests.add(a.response_node);
      }
    }
  }
  const nodes = new Set();
  for (const a of triples) for (const x of [a.source_node, a.ai_node, a.response_node]) if (x) nodes.add(x);
  return { nodes, triples };
}

export async function sessionView(root, { args, query }) {
  const [corpus, sid] = args;
  const base = `/sessions/${encodeURIComponent(corpus)}/${encodeURIComponent(sid)}`;
  performance.mark("timeline-fetch-start");
  // the metrics line is not worth waiting for: both requests go out together
  const metricsP = api("/workbench/sessions", { params: { corpus, session: sid, limit: 1 } })
    .then((p) => p.items[0] || null).catch(() => null);
  const data = await api(`${base}/timeline`);
  performance.mark("timeline-data");

  const head = el("div", { class: "session-head" },
    el("h1", {}, data.info.title || sid, " ", el("span", { class: "muted" }, `${corpus} / ${sid}`)),
    el("div", { class: "metrics muted", id: "session-metrics" }, metricLine(data, null)),
    data.info.goal ? el("div", {}, el("b", {}, "Goal: "), data.info.goal) : null);
  const legend = legendOf(data);
  const box = el("div", { id: "timeline", role: "img", "aria-label": `timeline of ${sid}` });
  const detail = el("div", { class: "pane", id: "detail" }, el("p", { class: "muted" },
    data.occurrences.node_id.length ? "Click a node on the timeline." : "Click an event on the timeline."));
  const side = el("div", {});
  // spans with parents (agent traces): nested under their parents, as a trace viewer draws them
  const tree = spanTree(data, { onSpan: (node) => showNode(node) });
  root.append(...[head, legend, box, tree?.element, el("div", { class: "below" }, side, detail)].filter(Boolean));

  metricsP.then((m) => root.querySelector("#session-metrics")?.replaceChildren(...metricLine(data, m)));
  const media = data.media[0];
  let video = null;
  if (media) {
    video = el("video", { id: "recording", controls: true, preload: "metadata", muted: true,
                          src: mediaUrl(`/media/${media.media_id}/file`) });
    side.append(el("h2", {}, "Recording"), video,
      el("div", { class: "muted", id: "video-time" }, "0:00:00"));
  } else {
    side.append(el("h2", {}, "Recording"), el("p", { class: "muted" }, "This session has no recording."));
  }
  side.append(countsLine(data));

  const tl = createTimeline(box, data, {
    onNode: (node) => showNode(node),
    onEvent: (i) => showEvent(i),
    onSeek: (t) => seek(t),
    onFirstRender: () => {
      performance.mark("timeline-rendered");
      // interactive once the main thread is free again after the first frame
      setTimeout(() => { performance.mark("timeline-interactive"); const host = root.closest("#view"); if (host) host.dataset.timeline = "ready"; }, 0);
    },
  });
  window.workbench = { timeline: tl, data, video, seek, showNode, showEvent };

  function seek(t) {
    tl.cursor(t);
    if (video) { video.currentTime = Math.max(0, Math.min(t, media.duration_s || t)); }
  }
  if (video) {
    let pending = false;
    const follow = () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        tl.cursor(video.currentTime);
        root.querySelector("#video-time").textContent = clock(video.currentTime);
      });
    };
    video.addEventListener("timeupdate", follow);
    video.addEventListener("seeked", follow);
  }
  const t = query.get("t");
  if (t !== null) {
    const at = Number(t);
    tl.zoom(Math.max(0, at - 120), at + 120);
    if (video) video.addEventListener("loadedmetadata", () => seek(at), { once: true });
    tl.cursor(at);
  }
  const node = query.get("node");
  if (node) showNode(node);

  function showEvent(i) {
    const e = data.events;
    tl.highlight(null);
    delete detail.dataset.node;
    detail.dataset.event = e.event_id[i];
    detail.replaceChildren(
      el("h2", { id: "detail-title" }, `${e.kind[i]}${e.channel[i] ? ` (${e.channel[i]})` : ""}`),
      el("dl", {},
        el("dt", {}, "event"), el("dd", { id: "detail-event" }, e.event_id[i]),
        el("dt", {}, "actor"), el("dd", {}, `${e.actor[i] || ""} (${e.actor_type[i] || "?"})`),
        el("dt", {}, "time"), el("dd", {}, clock(e.t[i]))),
      el("pre", { id: "detail-text" }, e.text[i] || ""));
    seek(e.t[i]);
  }

  async function showNode(nodeId) {
    const idx = tl.byNode.get(nodeId);
    if (!idx) { detail.replaceChildren(errorBox(new Error(`no node ${nodeId} in this session`))); return; }
    const o = data.occurrences, i = idx[0];
    const chain = adoptionChain(data.adoptions, nodeId);
    tl.highlight(chain.nodes.size ? chain.nodes : null, nodeId);
    if (tree) tree.open(nodeId);
    const times = idx.map((k) => `${clock(o.t_start[k])}–${clock(o.t_end[k] ?? o.t_start[k])}`).join(", ");
    const step = data.steps.find((s) => s.step_id === o.step_id[i]);
    detail.replaceChildren(
      el("h2", { id: "detail-title" }, o.label[i] || nodeId),
      el("dl", {},
        el("dt", {}, "node"), el("dd", { id: "detail-node" }, nodeId),
        el("dt", {}, "actor"), el("dd", {}, `${o.actor[i] || ""} (${o.actor_type[i] || "?"})`),
        el("dt", {}, "step"), el("dd", {}, step ? [step.badge, step.name].filter(Boolean).join(": ") || step.step_id : o.step_id[i] || ""),
        el("dt", {}, idx.length > 1 ? `${idx.length} occurrences` : "time"), el("dd", {}, times),
        el("dt", {}, "detail"), el("dd", {}, o.detail[i] || "")),
      chainList(chain, nodeId),
      el("h2", {}, "Chat before it"), el("div", { id: "detail-chat" }, el("span", { class: "muted" }, "...")),
      el("h2", {}, "Nearest frames"), el("div", { class: "thumbs", id: "detail-frames" }));
    delete detail.dataset.event;
    detail.dataset.node = nodeId;
    seek(o.t_start[i]);
    const still = () => detail.dataset.node === nodeId;  // not replaced by a later click
    const chat = await api(`${base}/chat`, { params: { t0: Math.max(0, o.t_start[i] - 600), t1: (o.t_end[i] ?? o.t_start[i]) + 0.001 } });
    if (!still()) return;
    const turns = chat.turns.slice(-2);
    detail.querySelector("#detail-chat").replaceChildren(...(turns.length ? turns.map(turn)
      : [el("span", { class: "muted" }, "no chat in the ten minutes before")]));
    if (media) {
      const t0 = Math.max(0, o.t_start[i] - 2), t1 = Math.min(media.duration_s || Infinity, (o.t_end[i] ?? o.t_start[i]) + 2);
      if (t1 > t0) {
        const frames = await api(`/media/${media.media_id}/frames`, { params: { t0, t1, n: 4 } });
        if (!still()) return;
        detail.querySelector("#detail-frames").replaceChildren(...frames.items.map((f) => el("img", {
          src: mediaUrl(`/media/${media.media_id}/frame.jpg`, { t: f.t, width: 320 }),
          title: clock(f.t), alt: `frame at ${clock(f.t)}`, onclick: () => seek(f.t) })));
      }
    }
  }
  return () => tl.dispose();
}

/** What the timeline's marks mean, for what this session has: adoption arrows where it has
 * responses, a swatch per event kind its ticks show, and the clicks that do something. */
function legendOf(data) {
  const swatch = (name, color, cls = "") => el("span", { dataset: { kind: name } },
    el("i", { class: cls, style: `background:${color}` }), name);
  const kinds = [...new Set(data.events.kind.filter(Boolean))].sort();
  const bars = data.occurrences.node_id.length > 0;
  const hint = ["scroll to zoom, drag to pan", bars ? "click a bar for details" : null,
    kinds.length ? "click a tick for its event" : null, "click empty space to seek"];
  return el("div", { class: "legend", id: "legend" },
    data.adoptions.length ? el("span", { class: "legend-group", id: "legend-adoptions" },
      el("b", {}, "responses "), Object.entries(LABEL_COLORS).map(([k, c]) => swatch(k, c)),
      swatch("request", "#8c959f")) : null,
    kinds.length ? el("span", { class: "legend-group", id: "legend-events" },
      el("b", {}, "event ticks "), kinds.map((k) => swatch(k, eventColor(k), "tick"))) : null,
    el("span", { class: "muted", id: "timeline-hint" }, hint.filter(Boolean).join(", ")));
}

function chainList(chain, nodeId) {
  if (!chain.triples.length) return el("p", { class: "muted", id: "detail-chain" }, "Not part of an adoption chain.");
  return el("div", { id: "detail-chain" }, el("h2", {}, `Adoption chain (${chain.triples.length})`),
    el("ol", {}, chain.triples.map((a) => el("li", {},
      `${a.source_node ?? "(no request)"} → ${a.ai_node} → ${a.response_node ?? "(no response)"}: `,
      el("b", { class: `label-${a.label}`, dataset: { label: a.label } }, a.label),
      [a.source_node, a.ai_node, a.response_node].includes(nodeId) ? " ◀" : ""))));
}

function turn(m) {
  return el("div", { class: `chat-turn ${m.actor_type === "ai" ? "ai" : ""}` },
    el("span", { class: "muted" }, `${clock(m.t)} ${m.actor_type}: `), m.text);
}

function countsLine(data) {
  const n = data.occurrences.node_id.length, ne = data.events.t.length;
  return el("p", { class: "muted" }, `${data.lanes.length} lanes · ${n} node occurrences · `
    + `${ne} other events · ${data.edges.length} edges · ${data.adoptions.length} adoption triples`);
}

function metricLine(data, m) {
  const parts = [];
  if (m) {
    for (const [k, label] of [["burstiness", "B"], ["topology_w", "W"], ["retention_adopt", "R_A"],
      ["retention_modify", "R_M"], ["collaboration_rating", "collaboration"], ["output_quality_rating", "quality"]]) {
      if (m[k] !== null && m[k] !== undefined) parts.push(el("span", {}, `${label} ${fmt(m[k], 3)}`));
    }
  }
  if (data.outcome) {
    parts.push(el("span", { class: data.outcome.success ? "pass" : "fail" }, data.outcome.success ? "passed" : "failed"));
    if (data.outcome.termination) parts.push(el("span", {}, `ended: ${data.outcome.termination}`));
  }
  parts.push(el("span", {}, `duration ${clock(data.duration_s)}`));
  return parts;
}
