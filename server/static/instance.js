// What a model sees: one benchmark instance exactly as the evaluator service hands it out
// (GET /benchmarks/{protocol}/instances/{id}), beside its session's timeline with the cut-off.
import { api, mediaUrl } from "./api.js";
import { records } from "./charts.js";
import { clock, el, errorBox } from "./dom.js";
import { createTimeline } from "./timeline.js";

export async function instanceView(root, { query }) {
  const benches = (await api("/benchmarks")).items;
  const proto = el("select", { id: "protocol" }, benches.map((b) => el("option", { value: b.id, title: b.description }, b.id)));
  const cond = el("select", { id: "condition" });
  const inst = el("select", { id: "instance" });
  const about = el("p", { class: "muted", id: "protocol-about" });
  const note = el("p", { class: "muted", id: "condition-note" });
  const answer = el("p", { id: "instance-answer" });  // opened from a run: what it answered
  const out = el("div", { id: "instance-view" });
  root.append(el("h1", {}, "What a model sees"),
    el("div", { class: "toolbar" }, el("label", {}, "protocol ", proto), el("label", {}, "condition ", cond),
      el("label", {}, "instance ", inst)), about, note, answer, out);
  let tl = null;

  proto.value = query.get("protocol") || benches[0]?.id || "";
  // the address's instance id holds on first load only: another protocol has other ids
  proto.addEventListener("change", () => pickProtocol(null, null));
  cond.addEventListener("change", () => listInstances(inst.value));
  inst.addEventListener("change", () => show());
  let shows = 0;  // which show() owns the pane: an older one that resumes drops its work

  const isVideo = (c) => (benches.find((x) => x.id === proto.value)?.video_conditions || []).includes(c);
  const page = (c) => api(`/benchmarks/${proto.value}/instances`, { params: { condition: c, limit: 50 } });

  async function pickProtocol(wantCond, wantId) {
    const b = benches.find((x) => x.id === proto.value);
    if (!b) return;
    about.textContent = `${b.description} Window: ${b.window}. Cut-off: ${b.cutoff}. Labels: ${b.labels.join(", ")}.`;
    cond.replaceChildren(...b.conditions.map((c) => el("option", { value: c }, c)));
    if (wantCond && b.conditions.includes(wantCond)) cond.value = wantCond;
    // a condition nobody asked for is a default: it must show an instance that has what it
    // promises, so an empty video condition gives way to the first one without video
    await listInstances(wantId, !wantCond);
  }
  async function listInstances(want, isDefault = false) {
    const asked = proto.value;
    let got = await page(cond.value);
    if (asked !== proto.value) return;  // the protocol changed while its list loaded
    note.textContent = isVideo(cond.value)
      ? "Video conditions list only the instances whose session has a recording." : "";
    if (!got.items.length && isVideo(cond.value) && isDefault && !want) {
      const other = [...cond.options].map((o) => o.value).find((c) => !isVideo(c));
      if (other) {
        const empty = cond.value;
        got = await page(other);
        if (asked !== proto.value) return;
        cond.value = other;
        note.textContent = `No session in this lake has a recording, so ${empty} (which lists `
          + `only instances whose session has one) is empty: showing ${other}.`;
      }
    }
    const ids = got.items.map((i) => i.id);
    if (want && !ids.includes(want)) ids.unshift(want);  // asked for by address: beyond page 1
    inst.replaceChildren(...ids.map((id) => el("option", { value: id }, id)));
    if (want) inst.value = want;
    await show();
  }
  async function show() {
    const gen = ++shows;
    if (tl) { tl.dispose(); tl = null; }
    if (!inst.value) {
      out.replaceChildren(el("p", { class: "muted" }, isVideo(cond.value)
        ? `No session in this lake has a recording: ${cond.value} lists only instances whose session has one.`
        : "No instances in this lake."));
      out.dataset.state = "ready";
      return;
    }
    out.dataset.state = "loading";
    try {
      const i = await api(`/benchmarks/${proto.value}/instances/${encodeURIComponent(inst.value)}`, { params: { condition: cond.value } });
      if (gen !== shows) return;
      const cutoff = i.inputs.cutoff ?? null;
      const box = el("div", { id: "timeline" });
      const v = i.inputs.video;
      const video = !v ? null : v.frames ? el("div", { class: "thumbs", id: "instance-frames" },
        v.frames.map((f) => el("img", { src: mediaUrl(f.url, { width: 320 }), title: clock(f.t), alt: `frame at ${clock(f.t)}` })))
        : el("p", { class: "muted", id: "instance-frames" }, "This session has no recording: the video part of the context is empty.");
      out.replaceChildren(...[  // (replaceChildren would print a null as "null")
        el("h2", {}, `${i.id} · ${i.condition} · ${i.corpus} / ${i.session_id}`,
          cutoff !== null ? el("span", { class: "muted" }, ` · cut-off ${clock(cutoff)}`) : null),
        el("p", {}, el("a", { href: `#/session/${encodeURIComponent(i.corpus)}/${encodeURIComponent(i.session_id)}?t=${cutoff ?? 0}` }, "open the session")),
        box, el("h2", {}, "Prompt"), el("pre", { id: "instance-prompt" }, i.prompt),
        video ? el("h2", {}, "Frames in the context") : null, video,
        el("details", {}, el("summary", {}, "inputs (JSON)"), el("pre", { id: "instance-inputs" }, JSON.stringify(i.inputs, null, 2))),
      ].filter(Boolean));
      const data = await api(`/sessions/${encodeURIComponent(i.corpus)}/${encodeURIComponent(i.session_id)}/timeline`);
      if (gen !== shows) return;
      tl = createTimeline(box, data, {});
      if (cutoff !== null) {
        const t0 = i.inputs.window?.t0 ?? null;
        tl.cutoff(cutoff, t0);
        const span = cutoff - (t0 ?? cutoff - 60);
        tl.zoom(Math.max(0, (t0 ?? cutoff) - span), cutoff + span);
      }
      const target = i.inputs.target?.ai_node;
      if (target) tl.highlight(new Set([target]), target);
      out.dataset.cutoff = String(cutoff);
    } catch (err) {
      if (gen !== shows || err.name === "AbortError") return;
      out.replaceChildren(errorBox(err));
    }
    out.dataset.state = "ready";
  }
  await pickProtocol(query.get("condition"), query.get("id"));
  if (query.get("run") && query.get("id")) await showAnswer(query.get("run"), query.get("id"));

  /** A kept evaluation run's answer to this instance (#/runs links here with run=). */
  async function showAnswer(run, id) {
    const res = await api("/queries/eval_predictions", { method: "POST", body: { params: { run, instance: id } } });
    const [p] = records(res);
    if (!p || inst.value !== id) return;  // not in that run, or another instance is shown
    answer.dataset.outcome = p.outcome;
    answer.className = `outcome-${p.outcome}`;
    answer.replaceChildren(`${p.model || "The model"} (${p.condition || "no condition"}) answered `,
      el("q", {}, p.answer ?? ""), p.predicted ? ` (read as ${p.predicted})` : " (no label read)",
      `; gold ${p.gold}: ${p.outcome}.`);
    inst.addEventListener("change", () => answer.replaceChildren(), { once: true });
  }
  return () => { if (tl) tl.dispose(); };
}
