// The workbench: a hash router over six views, each a client of graphlake's HTTP API.
import { api, setRouteSignal } from "./api.js";
import { errorBox } from "./dom.js";
import { browserView } from "./browser.js";
import { sessionView } from "./session.js";
import { searchView } from "./search.js";
import { sqlView } from "./sqlconsole.js";
import { instanceView } from "./instance.js";
import { runsView } from "./runs.js";

const VIEWS = { "": browserView, session: sessionView, search: searchView, sql: sqlView,
                instance: instanceView, runs: runsView };
const view = document.getElementById("view");
let current = null;  // the view's cleanup, called before the next one renders
let generation = 0;  // which render owns the page; an older one that resumes drops its work
let controller = null;  // aborts the requests of the route being left

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, qs] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { name: parts[0] || "", args: parts.slice(1), query: new URLSearchParams(qs || "") };
}

async function render() {
  const gen = ++generation;
  if (controller) controller.abort();
  controller = new AbortController();
  setRouteSignal(controller.signal);
  const r = route();
  const show = VIEWS[r.name] || VIEWS[""];
  for (const a of document.querySelectorAll("nav a[data-route]")) {
    a.classList.toggle("active", a.dataset.route === (r.name === "session" ? "" : r.name));
  }
  if (current) { try { current(); } catch (e) { console.warn(e); } current = null; }
  view.dataset.state = "loading";
  for (const key of Object.keys(view.dataset)) if (key !== "state") delete view.dataset[key];
  // each render draws into a container of its own: one left behind draws into a detached node
  const mount = document.createElement("div");
  mount.className = "route";
  view.replaceChildren(mount);
  let cleanup = null;
  try {
    cleanup = await show(mount, r);
  } catch (err) {
    if (gen !== generation) return;  // aborted by the route that replaced it
    mount.append(errorBox(err));
    view.dataset.state = "error";
    return;
  }
  if (gen !== generation) {  // left while it loaded: undo what it built (charts, listeners)
    try { if (cleanup) cleanup(); } catch (e) { console.warn(e); }
    return;
  }
  current = cleanup;
  view.dataset.state = "ready";
}

window.addEventListener("hashchange", render);
render();
api("/health", { signal: null }).then((h) => {
  document.getElementById("lake-version").textContent = `lake version ${h.lake_version}`;
}).catch(() => {});
