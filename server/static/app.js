// The workbench: a hash router over five views, each a client of graphlake's HTTP API.
import { api } from "./api.js";
import { errorBox } from "./dom.js";
import { browserView } from "./browser.js";
import { sessionView } from "./session.js";
import { searchView } from "./search.js";
import { sqlView } from "./sqlconsole.js";
import { instanceView } from "./instance.js";

const VIEWS = { "": browserView, session: sessionView, search: searchView, sql: sqlView,
                instance: instanceView };
const view = document.getElementById("view");
let current = null;  // the view's cleanup, called before the next one renders

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [path, qs] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { name: parts[0] || "", args: parts.slice(1), query: new URLSearchParams(qs || "") };
}

async function render() {
  const r = route();
  const show = VIEWS[r.name] || VIEWS[""];
  for (const a of document.querySelectorAll("nav a[data-route]")) {
    a.classList.toggle("active", a.dataset.route === (r.name === "session" ? "" : r.name));
  }
  if (current) { try { current(); } catch (e) { console.warn(e); } current = null; }
  view.dataset.state = "loading";
  for (const key of Object.keys(view.dataset)) if (key !== "state") delete view.dataset[key];
  view.replaceChildren();
  try {
    current = await show(view, r);
    view.dataset.state = "ready";
  } catch (err) {
    view.append(errorBox(err));
    view.dataset.state = "error";
  }
}

window.addEventListener("hashchange", render);
render();
api("/health").then((h) => {
  document.getElementById("lake-version").textContent = `lake version ${h.lake_version}`;
}).catch(() => {});
