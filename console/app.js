// The console shell: sign-in, navigation (hash routes), the signed-in key's level.
import { html, render, useEffect, useState } from "/console/vendor/preact-htm.js";
import { api, get, setCsrf } from "/console/lib/api.js";
import { Err } from "/console/lib/ui.js";
import Overview from "/console/pages/overview.js";
import Keys from "/console/pages/keys.js";
import Usage from "/console/pages/usage.js";
import Audit from "/console/pages/audit.js";
import Config from "/console/pages/config.js";
import Agents from "/console/pages/agents.js";
import Mcp from "/console/pages/mcp.js";
import Models from "/console/pages/models.js";
import Memory from "/console/pages/memory.js";
import Api from "/console/pages/api.js";

const PAGES = [
  ["overview", "Overview", Overview],
  ["keys", "Keys", Keys],
  ["usage", "Usage & spend", Usage],
  ["audit", "Audit log", Audit],
  ["config", "Config", Config],
  ["agents", "Agents & tasks", Agents],
  ["mcp", "MCP servers", Mcp],
  ["models", "Models", Models],
  ["memory", "Memory", Memory],
  ["api", "API", Api],
];

const route = () => (location.hash.replace(/^#\/?/, "").split("?")[0] || "overview");

function SignIn({ loopback, onDone }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    try { await api("POST", "/console/session", { api_key: key }); setKey(""); onDone(); } catch (err) { setError(err); }
  };
  const anon = async () => {
    setError(null);
    try { await api("POST", "/console/session/loopback"); onDone(); } catch (err) { setError(err); }
  };
  return html`<main class="signin">
    <h1>Sign in to svc</h1>
    <form onSubmit=${submit}>
      <label>API key <input id="api-key" type="password" autocomplete="off" required value=${key} onInput=${(e) => setKey(e.target.value)} /></label>
      <p class="note">The key is checked by the server and kept there; this page holds only a session cookie.</p>
      <button class="primary" type="submit">Sign in</button>
    </form>
    ${loopback ? html`<p><button type="button" onClick=${anon}>Continue without a key (loopback)</button></p>` : null}
    <${Err} error=${error} />
  </main>`;
}

function App() {
  const [me, setMe] = useState(undefined);
  const [loopback, setLoopback] = useState(false);
  const [page, setPage] = useState(route());
  const check = async () => {
    try {
      const s = await get("/console/session");
      setCsrf(s.csrf);
      setMe(s);
    } catch (e) {
      setLoopback(!!e.body?.loopback_available);
      setMe(null);
    }
  };
  useEffect(() => { check(); const f = () => setPage(route()); addEventListener("hashchange", f); return () => removeEventListener("hashchange", f); }, []);
  if (me === undefined) return html`<p class="loading">Loading…</p>`;
  if (me === null) return html`<${SignIn} loopback=${loopback} onDone=${check} />`;
  const signOut = async () => { await api("DELETE", "/console/session").catch(() => {}); setMe(null); check(); };
  const Page = (PAGES.find((p) => p[0] === page) ?? PAGES[0])[2];
  const k = me.key;
  return html`
    <header class="top"><strong>svc console</strong>
      <span class="who" data-testid="who">${me.loopback ? "loopback (administrative key)" : `${k.name} (${k.id})`} · access level <b>${k.access_level}</b></span>
      <button type="button" onClick=${signOut}>Sign out</button>
    </header>
    <nav class="side" aria-label="Pages">${PAGES.map(([id, label]) => html`<a href=${`#/${id}`} aria-current=${id === page ? "page" : undefined}>${label}</a>`)}</nav>
    <main id="main"><${Page} me=${me} /></main>`;
}

render(html`<${App} />`, document.getElementById("app"));
