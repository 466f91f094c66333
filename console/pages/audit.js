// Audit log: filters, server-side paging (cursor), row detail, the trace id of traced requests.
import { html, useState } from "/console/vendor/preact-htm.js";
import { get, qs } from "/console/lib/api.js";
import { Badge, Err, Table, useLoad, usd, when } from "/console/lib/ui.js";

const EMPTY = { key: "", status: "", action: "", model: "", workflow_id: "", user_id: "", since: "", until: "" };

export default function Audit({ me }) {
  const [f, setF] = useState(EMPTY);
  const [q, setQ] = useState(EMPTY);
  const [cursors, setCursors] = useState([""]); // the cursor of each page seen so far
  const [row, setRow] = useState(null);
  const cursor = cursors[cursors.length - 1];
  // an ordinary key reads its own log: the header names it
  const keyId = q.key || (me.key.role === "admin" || me.key.view_all_usage ? "" : me.key.id);
  const { data, error, reload } = useLoad(() => get(`/v1/audit-logs?${qs({
    limit: 25, cursor, status: q.status, action: q.action, model: q.model, "metadata.workflow_id": q.workflow_id, "metadata.user_id": q.user_id,
    since: q.since ? new Date(q.since).toISOString() : "", until: q.until ? new Date(q.until).toISOString() : "",
  })}`, keyId ? { "x-api-key-id": keyId } : {}), [JSON.stringify(q), cursor, keyId]);
  const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
  // reload too: with the same filters the deps do not change, and Filter is the page's only way to
  // see entries written since it loaded
  const apply = (e) => { e.preventDefault(); setQ(f); setCursors([""]); setRow(null); reload(); };
  const cols = [
    { label: "Time", render: (r) => when(r.timestamp) },
    { label: "Key", render: (r) => r.api_key_name ?? r.api_key_id ?? "–" },
    { label: "Action", key: "action" },
    { label: "Model", render: (r) => r.model ?? "–" },
    { label: "Status", render: (r) => html`<${Badge} v=${r.status === "success" ? "success" : "error"} /> ${r.status === "success" ? "" : r.status}` },
    { label: "Tokens", num: true, render: (r) => r.tokens?.total ?? 0 },
    { label: "Cost", num: true, render: (r) => usd(r.cost_usd) },
    { label: "ms", num: true, render: (r) => r.latency_ms ?? "–" },
    // the request's OpenTelemetry trace (tracing on): the full id is in the row's detail, to paste into Jaeger, Tempo or Langfuse
    { label: "Trace", render: (r) => (r.trace_id ? html`<code title=${r.trace_id}>${r.trace_id.slice(0, 8)}…</code>` : "–") },
  ];
  const field = (k, label, type = "text") => html`<label>${label} <input name=${k} type=${type} value=${f[k]} onInput=${set(k)} /></label>`;
  return html`<h1>Audit log</h1>
    <form class="row" onSubmit=${apply}>
      ${field("key", "Key id")}
      <label>Status <select name="status" value=${f.status} onChange=${set("status")}><option value="">any</option><option value="success">success</option><option value="error">errors and refusals</option><option value="rate_limit_exceeded">rate_limit_exceeded</option><option value="budget_exceeded">budget_exceeded</option><option value="key_revoked">key_revoked</option><option value="permission_denied">permission_denied</option></select></label>
      ${field("action", "Action")} ${field("model", "Model")} ${field("workflow_id", "workflow_id")} ${field("user_id", "user_id")}
      ${field("since", "Since", "datetime-local")} ${field("until", "Until", "datetime-local")}
      <button class="primary" type="submit">Filter</button>
    </form>
    <${Err} error=${error} />
    ${data ? html`<div data-testid="audit-table"><${Table} rows=${data.data} cols=${cols} onRow=${setRow} caption="audit entries" empty="no entries match" /></div>
      <div class="row">
        <button type="button" disabled=${cursors.length < 2} onClick=${() => setCursors(cursors.slice(0, -1))}>Previous page</button>
        <span class="note">page ${cursors.length}</span>
        <button type="button" disabled=${!data.has_more} onClick=${() => setCursors([...cursors, data.next_cursor])}>Next page</button>
      </div>` : null}
    ${row ? html`<section aria-labelledby="row-h"><h2 id="row-h">Request ${row.request_id}</h2>${row.trace_id ? html`<p>Trace id <code data-testid="audit-trace">${row.trace_id}</code></p>` : null}<pre data-testid="audit-detail">${JSON.stringify(row, null, 2)}</pre><button type="button" onClick=${() => setRow(null)}>Close</button></section>` : null}`;
}
