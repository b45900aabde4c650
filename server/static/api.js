// The one way the workbench talks to graphlake: the service's own HTTP API, the same endpoints
// evaluators call. A token given as /?token=T is kept for this tab and sent on every call;
// <video> and <img> cannot send headers, so media URLs carry it as ?token=.
const KEY = "graphlake-token";
const given = new URLSearchParams(location.search).get("token");
if (given) sessionStorage.setItem(KEY, given);
const token = sessionStorage.getItem(KEY);

export class ApiError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

function url(path, params) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== null && v !== undefined && v !== "") u.searchParams.set(k, v);
  }
  return u;
}

// The route being shown: every call started while it is current is aborted when the route
// changes (app.js), so a view that was left never renders into the next one.
let routeSignal = null;
export function setRouteSignal(signal) { routeSignal = signal; }

export async function api(path, { method = "GET", params, body, signal = routeSignal } = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(url(path, params), {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal,
  });
  const data = await resp.json().catch(() => null);
  if (!resp.ok) throw new ApiError(data?.error?.message || `${resp.status} ${resp.statusText}`, resp.status);
  return data;
}

/** A URL for an element that loads it itself (video, img). */
export function mediaUrl(path, params = {}) {
  const u = url(path, params);
  if (token) u.searchParams.set("token", token);
  return u.pathname + u.search;
}
