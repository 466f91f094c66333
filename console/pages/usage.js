// Usage and spend: GET /v1/usage grouped per key, team, organization, model or day; a chart, the
// table, a CSV download of the same query, and monthly budget progress per key.
import { html, useState } from "/console/vendor/preact-htm.js";
import { get, qs } from "/console/lib/api.js";
import { Bar, Chart, Err, Table, TopChart, int, monthStart, useLoad, usd } from "/console/lib/ui.js";

const GROUPS = [["key", "key"], ["team", "team"], ["organization", "organization"], ["model", "model"], ["day", "day"], ["provider", "provider"], ["metadata.workflow_id", "workflow_id"], ["metadata.user_id", "user_id"]];
const FIELD = { key: "key_id", team: "team_id", organization: "organization_id", model: "model", day: "day", provider: "provider", "metadata.workflow_id": "workflow_id", "metadata.user_id": "user_id" };
const isoDay = (d) => d.toISOString().slice(0, 10);

export default function Usage() {
  const [f, setF] = useState({ group_by: "key", from: isoDay(monthStart()), to: "" });
  const [q, setQ] = useState(f);
  const query = { group_by: q.group_by, from: q.from || undefined, to: q.to ? new Date(Date.parse(q.to) + 86_400_000).toISOString().slice(0, 10) : undefined };
  const { data, error, reload } = useLoad(() => get(`/v1/usage?${qs(query)}`), [JSON.stringify(q)]);
  const budgets = useLoad(async () => {
    const [keys, month] = await Promise.all([get("/v1/api-keys").catch(() => ({ keys: [] })), get(`/v1/usage?${qs({ group_by: "key", from: monthStart().toISOString() })}`)]);
    const spend = new Map(month.data.map((r) => [r.key_id, r.spend]));
    return keys.keys.filter((k) => k.budget_limits?.monthly != null).map((k) => ({ ...k, month_spend: spend.get(k.id) ?? 0 }));
  });
  const field = FIELD[q.group_by];
  const label = (r) => (q.group_by === "key" ? r.key_name ?? r.key_id : r[field]) ?? "(none)";
  const rows = data?.data ?? [];
  const cols = [
    { label: q.group_by, render: (r) => label(r) },
    ...(q.group_by === "key" ? [{ label: "key id", render: (r) => html`<code>${r.key_id}</code>` }] : []),
    { label: "Requests", num: true, render: (r) => int(r.requests) },
    { label: "Prompt tokens", num: true, render: (r) => int(r.prompt_tokens) },
    { label: "Completion tokens", num: true, render: (r) => int(r.completion_tokens) },
    { label: "Spend", num: true, render: (r) => usd(r.spend) },
    { label: "Errors", num: true, render: (r) => int(r.errors) },
    { label: "Refusals", render: (r) => Object.entries(r.refusals).map(([k, n]) => `${k}: ${n}`).join(", ") || "–" },
    { label: "p50 ms", num: true, render: (r) => r.latency_p50_ms ?? "–" },
    { label: "p95 ms", num: true, render: (r) => r.latency_p95_ms ?? "–" },
  ];
  const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
  return html`<h1>Usage and spend</h1>
    <form class="row" onSubmit=${(e) => { e.preventDefault(); setQ(f); reload(); /* the same range again must read again: its deps would not change */ }}>
      <label>Group by <select name="group_by" value=${f.group_by} onChange=${set("group_by")}>${GROUPS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select></label>
      <label>From (UTC day) <input type="date" name="from" value=${f.from} onInput=${set("from")} /></label>
      <label>To (UTC day, inclusive) <input type="date" name="to" value=${f.to} onInput=${set("to")} /></label>
      <button class="primary" type="submit">Show</button>
      <a href=${`/v1/usage?${qs({ ...query, format: "csv" })}`} download="usage.csv">Download CSV</a>
    </form>
    <${Err} error=${error} />
    ${data ? (q.group_by === "day"
      ? html`<${Chart} title="Requests per day" x=${rows.map((r) => Date.parse(r.day) / 1000)} bars=${true} series=${[{ label: "requests", values: rows.map((r) => r.requests) }]} />`
      : html`<${TopChart} title=${`Requests by ${q.group_by}`} rows=${rows.slice(0, 20)} label=${label} value=${(r) => r.requests} />`) : null}
    ${data ? html`<div data-testid="usage-table"><${Table} rows=${rows} cols=${cols} caption="usage" empty="no usage in this range" /></div>` : null}
    <h2>Monthly budgets</h2>
    <${Table} rows=${budgets.data ?? []} empty="no key has a monthly budget" cols=${[
      { label: "Key", render: (k) => k.name },
      { label: "Spend this month / budget", render: (k) => html`<${Bar} used=${k.month_spend} limit=${k.budget_limits.monthly} label=${`budget of ${k.name}`} fmt=${usd} />` },
    ]} />`;
}
