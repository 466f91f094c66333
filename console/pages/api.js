// API: every HTTP route of this build, read from its OpenAPI document (GET /openapi.json), with
// who may call it and, for routes that take a body, the body's JSON Schema.
import { html, useState } from "/console/vendor/preact-htm.js";
import { get } from "/console/lib/api.js";
import { Err, Table, useLoad } from "/console/lib/ui.js";

function rowsOf(doc) {
  const out = [];
  for (const [path, item] of Object.entries(doc?.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) out.push({ method: method.toUpperCase(), path, op });
  }
  return out;
}

const access = (op) => (op.security ? "key (or loopback)" : op.description?.startsWith("Served on loopback") ? "loopback" : "anyone");

export default function Api() {
  const doc = useLoad(() => get("/openapi.json"));
  const [tag, setTag] = useState("");
  const [open, setOpen] = useState(null);
  const rows = rowsOf(doc.data).filter((r) => !tag || r.op.tags?.includes(tag));
  const tags = [...new Set(rowsOf(doc.data).flatMap((r) => r.op.tags ?? []))].sort();
  const body = open?.op.requestBody?.content?.["application/json"]?.schema;
  return html`<h1>API</h1>
    <p>Every route of this build (OpenAPI ${doc.data?.openapi ?? ""}, <a href="/openapi.json">/openapi.json</a>). Errors are <code>{error: {message, type, code, param}}</code>.</p>
    <${Err} error=${doc.error} />
    <label>Group <select value=${tag} onChange=${(e) => setTag(e.target.value)}>
      <option value="">all</option>
      ${tags.map((t) => html`<option value=${t}>${t}</option>`)}
    </select></label>
    <${Table} rows=${rows} caption="routes (select one for its request body)" empty="no routes" onRow=${setOpen} cols=${[
      { label: "Method", render: (r) => html`<code>${r.method}</code>` },
      { label: "Path", render: (r) => html`<code>${r.path}</code>` },
      { label: "What it does", render: (r) => r.op.summary },
      { label: "Who may call", render: (r) => access(r.op) },
    ]} />
    ${open && html`<section aria-label="route detail">
      <h2><code>${open.method} ${open.path}</code></h2>
      <p>${open.op.summary}</p>
      ${body ? html`<h3>Request body (JSON Schema)</h3><pre>${JSON.stringify(body, null, 2)}</pre>` : html`<p>No request body.</p>`}
    </section>`}`;
}
