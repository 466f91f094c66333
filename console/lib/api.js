// Calls to svc's HTTP APIs with the session cookie (sent by the browser) and, on writes, the
// session's CSRF token. The key itself never reaches this page.
let csrf = "";
export const setCsrf = (t) => { csrf = t || ""; };

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
    this.body = body;
  }
}

export async function api(method, path, body, headers = {}) {
  const h = { accept: "application/json", ...headers };
  if (body !== undefined) h["content-type"] = "application/json";
  if (method !== "GET" && method !== "HEAD") h["x-csrf-token"] = csrf;
  const res = await fetch(path, { method, headers: h, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = text; }
  if (!res.ok) throw new ApiError(res.status, json);
  return json;
}

export const get = (path, headers) => api("GET", path, undefined, headers);

/** GET text (YAML exports). */
export async function getText(path) {
  const res = await fetch(path, { credentials: "same-origin" });
  const text = await res.text();
  if (!res.ok) { let j = null; try { j = JSON.parse(text); } catch {} throw new ApiError(res.status, j); }
  return text;
}

export const qs = (o) => new URLSearchParams(Object.entries(o).filter(([, v]) => v !== undefined && v !== null && v !== "")).toString();
