// Vega-Lite charts of named queries (queries/charts/<name>.vl.json): the vendored Vega,
// Vega-Lite and vega-embed are loaded on the first chart, since most visits draw none.
/* global vegaEmbed */

const VEGA = ["vega.min.js", "vega-lite.min.js", "vega-embed.min.js"].map((f) => `/static/vendor/${f}`);
let vegaLoaded = null;

function loadVega() {
  vegaLoaded ||= VEGA.reduce((prev, src) => prev.then(() => new Promise((resolve, reject) => {
    const tag = document.createElement("script");
    tag.src = src;
    tag.onload = resolve;
    tag.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(tag);
  })), Promise.resolve());
  return vegaLoaded;
}

/** Records of a /sql or /queries answer (columns and rows as arrays). */
export function records(res) {
  return res.rows.map((r) => Object.fromEntries(res.columns.map((c, i) => [c, r[i]])));
}

/** Draw `spec` over the answer's rows into `box`; the view (finalize() it when leaving). */
export async function drawChart(box, spec, res) {
  await loadVega();
  const { view } = await vegaEmbed(box, {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json", ...spec, data: { values: records(res) },
  }, { actions: false, renderer: "svg" });
  box.dataset.rendered = "true";
  return view;
}
