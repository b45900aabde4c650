// The session timeline, drawn by Apache ECharts (vendored): one swimlane per actor, a bar per
// node occurrence (a loop is several bars), a tick per event no node stands for, step bands
// with their ratings, action edges, and adoption arrows coloured by label. Canvas rendering,
// no animation and no data filtering on zoom keep zoom and pan smooth at thousands of bars.
/* global echarts */
import { clock } from "./dom.js";

export const LABEL_COLORS = { adopt: "#1a7f37", modify: "#bf8700", reject: "#cf222e" };
const ACTOR_COLORS = { human: "#57606a", user: "#57606a", simulated_user: "#8250df",
                       ai: "#0969da", agent: "#0969da", tool: "#9a6700", system: "#6e7781" };
// event ticks: none of the adoption colours (green, amber, red), so an arrow and a tick never
// read alike; kinds without a colour of their own take one of the spare ones, by name
const EVENT_COLORS = { message: "#8250df", clarification: "#bc4c00", feedback: "#1b7c83",
                       control: "#bf3989", tool_call: "#953800", tool_result: "#3d444d",
                       error: "#24292f", retrieval: "#0a3069" };
const SPARE_EVENT_COLORS = ["#6639ba", "#0550ae", "#7d4e00", "#99286e", "#116329", "#57606a"];

/** The colour of an event kind's ticks (the legend's too). */
export function eventColor(kind) {
  if (EVENT_COLORS[kind]) return EVENT_COLORS[kind];
  let h = 0;
  for (const c of String(kind)) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return SPARE_EVENT_COLORS[h % SPARE_EVENT_COLORS.length];
}

/** What a step band is called: its name where the source has one, else its badge. */
export function stepLabel(s) { return s.name || s.badge || s.step_id; }
const STEP_FILL = ["rgba(9,105,218,0.05)", "rgba(130,80,223,0.07)"];

function color(map, key) { return map[key] || "#6e7781"; }

export function createTimeline(container, data, { onNode, onEvent, onSeek, onFirstRender } = {}) {
  const occ = data.occurrences, ev = data.events;
  const n = occ.node_id.length;
  const byNode = new Map();  // node_id -> occurrence indices, in time order
  for (let i = 0; i < n; i++) {
    if (!byNode.has(occ.node_id[i])) byNode.set(occ.node_id[i], []);
    byNode.get(occ.node_id[i]).push(i);
  }
  let lit = null;  // node_ids to highlight (null: all at full strength)
  let selected = null;

  const end = (i) => (occ.t_end[i] ?? occ.t_start[i]);
  const barData = () => {
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = [occ.lane[i], occ.t_start[i], end(i), i];
    return out;
  };
  const evData = ev.t.map((t, i) => [ev.lane[i], t, ev.t_end[i] ?? t, i]);

  // the occurrence of `node` an arrow to `t` leaves from: its last start at or before t
  function occBefore(node, t) {
    const list = byNode.get(node);
    if (!list) return null;
    let pick = list[0];
    for (const i of list) if (occ.t_start[i] <= t) pick = i;
    return pick;
  }
  // an arrow from the end of src's occurrence before dst starts, to dst's first start
  function arrow(src, dst) {
    const d = byNode.get(dst)?.[0];
    if (d === undefined) return null;
    const s = occBefore(src, occ.t_start[d]);
    if (s === null) return null;
    return [[end(s), occ.lane[s]], [occ.t_start[d], occ.lane[d]]];
  }
  const lines = (list) => list.filter(Boolean).map((coords) => ({ coords }));
  const edgeLines = lines(data.edges.map((e) => arrow(e.src, e.dst)));
  const requests = lines(data.adoptions.filter((a) => a.source_node).map((a) => arrow(a.source_node, a.ai_node)));
  const responses = {};  // label -> lines from the AI output to the person's response
  const heads = [];      // [x1, lane1, x2, lane2, label index]: arrowheads, drawn per frame
  const labels = Object.keys(LABEL_COLORS);
  for (const a of data.adoptions) {
    if (!a.response_node) continue;
    const c = arrow(a.ai_node, a.response_node);
    if (!c) continue;
    (responses[a.label] ||= []).push({ coords: c });
    heads.push([c[0][0], c[0][1], c[1][0], c[1][1], labels.indexOf(a.label)]);
  }
  // lines series in ECharts' large mode: one path per series, not one element per line,
  // which keeps zoom and pan at thousands of edges cheap; arrowheads are their own series
  const lineSeries = (id, data, style, z) => ({
    id, type: "lines", coordinateSystem: "cartesian2d", silent: true, clip: true,
    large: data.length > 0, largeThreshold: 0, symbol: "none", lineStyle: style, data, z });
    // (ECharts' large mode fails on an empty series: agent traces have no edges)
  const CURVE = 0.3;

  function arrowhead(p, api) {
    const a = api.coord([api.value(0), api.value(1)]), b = api.coord([api.value(2), api.value(3)]);
    const cs = p.coordSys;
    if (b[0] < cs.x || b[0] > cs.x + cs.width) return null;
    // the tangent at the end of ECharts' quadratic curve (its control point for curveness c)
    const cp = [(a[0] + b[0]) / 2 - (a[1] - b[1]) * CURVE, (a[1] + b[1]) / 2 - (b[0] - a[0]) * CURVE];
    const ang = Math.atan2(b[1] - cp[1], b[0] - cp[0]);
    const L = 9, W = 4;
    const back = [b[0] - L * Math.cos(ang), b[1] - L * Math.sin(ang)];
    const off = [W * Math.sin(ang), -W * Math.cos(ang)];
    return { type: "polygon", shape: { points: [b, [back[0] + off[0], back[1] + off[1]],
      [back[0] - off[0], back[1] - off[1]]] }, style: { fill: LABEL_COLORS[labels[api.value(4)]] } };
  }

  // a bar fills the middle half of its lane; `dy` moves it down by a share of the lane's
  // height and `hf` is its height as a share
  function bar(paramsIndex, api, fill, dy = 0, hf = 0.5) {
    const lane = api.value(0);
    const a = api.coord([api.value(1), lane]), b = api.coord([api.value(2), lane]);
    const band = api.size([0, 1])[1], h = band * hf;
    const cs = paramsIndex.coordSys;
    if (b[0] < cs.x || a[0] > cs.x + cs.width) return null;  // off screen: nothing to draw
    // the series clips what overlaps the edges
    return { type: "rect", shape: { x: a[0], y: a[1] + dy * band - h / 2, width: Math.max(3, b[0] - a[0]), height: h },
             style: { fill, stroke: "#fff", lineWidth: 0.5 } };
  }
  // a participant's events share the lane of their nodes (a person's chat turns beside what
  // they did): there the ticks run in a strip below the bars, where nothing covers them
  const barLanes = new Set(occ.lane);
  const TICK_DY = 0.36, TICK_H = 0.18;
  const tickDy = (lane) => (barLanes.has(lane) ? TICK_DY : 0);

  const timedSteps = data.steps.filter((s) => s.t_start !== null && s.t_end !== null);
  const stepNames = timedSteps.map((s) => {
    const r = s.ratings || {};
    const rated = [r.collaboration !== undefined ? `collab ${r.collaboration}` : null,
                   r.output_quality !== undefined ? `quality ${r.output_quality}` : null].filter(Boolean);
    return `${stepLabel(s)}${rated.length ? ` · ${rated.join(" · ")}` : ""}`;
  });
  const GRID = { left: 150, right: 24, top: 34, bottom: 56 };
  // step bands; a band too narrow on screen for its name goes unnamed (names would overlap)
  function stepBands(span) {
    const px = Math.max(1, container.clientWidth - GRID.left - GRID.right) / Math.max(span, 1e-9);
    return timedSteps.map((s, k) => [{
      xAxis: s.t_start, itemStyle: { color: STEP_FILL[k % 2] },
      name: (s.t_end - s.t_start) * px > stepNames[k].length * 6.5 ? stepNames[k] : "",
    }, { xAxis: s.t_end }]);
  }
  const duration = Math.max(1, data.duration_s);

  const chart = echarts.init(container, null, { renderer: "canvas" });
  if (onFirstRender) {
    chart.on("finished", function first() { chart.off("finished", first); onFirstRender(); });
  }
  const option = {
    animation: false,
    grid: GRID,
    tooltip: { trigger: "item", confine: true, formatter: tooltip },
    xAxis: { type: "value", min: 0, max: duration, axisLabel: { formatter: clock, hideOverlap: true,
             // the ends of a zoomed axis fall between ticks, a hair from their neighbours
             showMinLabel: false, showMaxLabel: false },
             splitLine: { show: false } },
    yAxis: { type: "category", inverse: true, data: data.lanes.map((l) => l.label),
             axisLabel: { width: 140, overflow: "truncate" }, splitLine: { show: true } },
    dataZoom: [
      { type: "inside", xAxisIndex: 0, filterMode: "none" },
      { type: "slider", xAxisIndex: 0, filterMode: "none", height: 18, bottom: 8,
        labelFormatter: (v) => clock(v) },
    ],
    series: [
      // node bars above event ticks (which run below the bars where a lane has both)
      { id: "occ", type: "custom", z: 2.5, renderItem: (p, api) => {
          const i = api.value(3);
          const node = occ.node_id[i];
          let fill = color(ACTOR_COLORS, occ.actor_type[i]);
          if (lit && !lit.has(node)) fill = "#d0d7de";
          if (node === selected) fill = "#fb8500";
          return bar(p, api, fill);
        },
        encode: { x: [1, 2], y: 0 }, data: barData(), clip: true,
        markArea: { silent: true, label: { position: "insideTop", fontSize: 10, color: "#57606a" },
                    data: stepBands(duration) } },
      { id: "events", type: "custom", z: 2, renderItem: (p, api) => {
          const lane = api.value(0), strip = barLanes.has(lane);
          return bar(p, api, eventColor(ev.kind[api.value(3)]), strip ? TICK_DY : 0, strip ? TICK_H : 0.5);
        },
        encode: { x: [1, 2], y: 0 }, data: evData, clip: true },
      lineSeries("edges", edgeLines, { color: "#afb8c1", width: 1, opacity: 0.6, curveness: 0.15 }, 1),
      lineSeries("requests", requests, { color: "#8c959f", width: 1, type: "dashed", curveness: CURVE }, 2),
      ...labels.map((l) => lineSeries(`adoptions-${l}`, responses[l] || [],
        { color: LABEL_COLORS[l], width: 2.5, curveness: CURVE }, 3)),
      { id: "arrowheads", type: "custom", silent: true, renderItem: arrowhead, data: heads, z: 4,
        encode: { x: [0, 2], y: [1, 3] }, clip: true },
      { id: "cursor", type: "line", data: [], silent: true,
        markLine: { symbol: "none", silent: true, animation: false, label: { show: false },
                    lineStyle: { color: "#cf222e", width: 1.5, type: "solid" }, data: [] } },
      { id: "cutoff", type: "line", data: [], silent: true,
        markLine: { symbol: "none", silent: true, animation: false,
                    // above the plot (the y axis runs top down: "start" is the top),
                    // clear of the time axis's labels below and the step names inside
                    label: { formatter: "cut-off", color: "#cf222e", position: "start" },
                    lineStyle: { color: "#cf222e", width: 2, type: "dashed" }, data: [] } },
    ],
  };
  chart.setOption(option);

  function tooltip(p) {
    if (p.seriesId === "occ") {
      const i = p.value[3];
      return `<b>${esc(occ.label[i] || occ.node_id[i])}</b><br>${esc(occ.actor[i] || occ.actor_type[i])} · `
        + `${clock(occ.t_start[i])}–${clock(end(i))}<br>${esc((occ.detail[i] || "").slice(0, 160))}`;
    }
    if (p.seriesId === "events") {
      const i = p.value[3];
      return `<b>${esc(ev.kind[i])}</b> ${esc(ev.actor[i] || ev.actor_type[i] || "")} · ${clock(ev.t[i])}`
        + `<br>${esc((ev.text[i] || "").slice(0, 160))}`;
    }
    return "";
  }

  // one handler that looks at the series (ECharts' click queries do not filter by seriesId)
  chart.on("click", (p) => {
    if (p.seriesId === "occ" && onNode) onNode(occ.node_id[p.value[3]], p.value[3]);
    else if (p.seriesId === "events" && onEvent) onEvent(p.value[3]);
  });
  chart.getZr().on("click", (e) => {
    if (e.target || !onSeek) return;
    const px = [e.offsetX, e.offsetY];
    if (!chart.containPixel("grid", px)) return;
    onSeek(chart.convertFromPixel("grid", px)[0]);
  });
  chart.on("datazoom", (e) => {
    const z = e.batch ? e.batch[0] : e;
    const span = z.startValue !== undefined ? z.endValue - z.startValue
      : ((z.end ?? 100) - (z.start ?? 0)) / 100 * duration;
    chart.setOption({ series: [{ id: "occ", markArea: { data: stepBands(span) } }] }, { lazyUpdate: true });
  });
  const resize = () => chart.resize();
  window.addEventListener("resize", resize);

  function laneHeight() {
    const grid = chart.getModel().getComponent("grid").coordinateSystem.getRect();
    return grid.height / Math.max(1, data.lanes.length);
  }

  function redraw() { chart.setOption({ series: [{ id: "occ", data: barData() }] }); }

  return {
    chart, byNode,
    /** Highlight these node_ids (dim the rest); null shows all. */
    highlight(nodes, node = null) { lit = nodes; selected = node; redraw(); },
    /** The node_ids drawn highlighted (null: all). */
    litNodes() { return lit ? [...lit] : null; },
    cursor(t) {
      chart.setOption({ series: [{ id: "cursor", markLine: { data: t === null ? [] : [{ xAxis: t }] } }] },
                      { lazyUpdate: true, silent: true });
    },
    /** Mark a context's cut-off, and shade its window [t0, t] when t0 is given. */
    cutoff(t, t0 = null) {
      chart.setOption({ series: [{ id: "cutoff", markLine: { data: t === null ? [] : [{ xAxis: t }] },
        markArea: { silent: true, itemStyle: { color: "rgba(207,34,46,0.07)" },
                    label: { show: true, position: "insideBottom", formatter: "context window", color: "#cf222e", fontSize: 10 },
                    data: t === null || t0 === null ? [] : [[{ xAxis: t0 }, { xAxis: t }]] } }] });
    },
    /** Zoom the time axis to [t0, t1] seconds. */
    zoom(t0, t1) { chart.dispatchAction({ type: "dataZoom", startValue: t0, endValue: t1 }); },
    /** Pixel (relative to the container) of a node's first bar's middle: tests click there. */
    pixelOf(node) {
      const i = byNode.get(node)?.[0];
      if (i === undefined) return null;
      const a = chart.convertToPixel("grid", [occ.t_start[i], occ.lane[i]]);
      const b = chart.convertToPixel("grid", [end(i), occ.lane[i]]);
      return [(a[0] + Math.max(a[0] + 3, b[0])) / 2, a[1]];
    },
    /** Pixel (relative to the container) of event i's tick. */
    pixelOfEvent(i) {  // the middle of the tick (at least 3 px wide)
      const [x, y] = chart.convertToPixel("grid", [ev.t[i], ev.lane[i]]);
      const x1 = chart.convertToPixel("grid", [ev.t_end[i] ?? ev.t[i], ev.lane[i]])[0];
      return [x + Math.max(3, x1 - x) / 2, y + tickDy(ev.lane[i]) * laneHeight()];
    },
    /** The height of one lane in pixels. */
    laneHeight,
    /** Pixel (relative to the container) of time t in empty space below the last lane's bars:
     * a click there seeks. */
    pixelAtTime(t) {
      const last = data.lanes.length - 1;
      const [x, y] = chart.convertToPixel("grid", [t, last]);
      return [x, y + laneHeight() * 0.475];  // below the bars and the ticks' strip
    },
    /** Where the playback cursor is drawn (null: not drawn). */
    cursorAt() {
      const s = chart.getOption().series.find((x) => x.id === "cursor");
      return s.markLine.data.length ? s.markLine.data[0].xAxis : null;
    },
    dispose() { window.removeEventListener("resize", resize); chart.dispose(); },
  };
}

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
