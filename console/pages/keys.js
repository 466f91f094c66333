// Keys: list (status, type, owner, expiry, usage against limits), create (secret shown once),
// edit limits, revoke with confirmation. Manifest-owned keys are read-only ("managed by config:…").
import { html, useState } from "/console/vendor/preact-htm.js";
import { api, get } from "/console/lib/api.js";
import { Badge, Bar, Err, Table, int, monthStart, useLoad, usd, when } from "/console/lib/ui.js";

const num = (v) => (v === "" || v == null ? undefined : Number(v));

function CreateKey({ onCreated }) {
  const blank = { name: "", key_type: "user", access_level: "custom", organization_id: "", team_id: "", user_id: "", per_minute: "", monthly: "", expires_at: "" };
  const [f, setF] = useState(blank);
  const [error, setError] = useState(null);
  const [made, setMade] = useState(null);
  const [copied, setCopied] = useState(false);
  const set = (k) => (e) => setF({ ...f, [k]: e.target.value });
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    const body = { name: f.name || undefined, key_type: f.key_type, access_level: f.access_level, organization_id: f.organization_id || undefined, team_id: f.team_id || undefined, user_id: f.user_id || undefined };
    if (f.per_minute) body.rate_limits = { per_minute: num(f.per_minute) };
    if (f.monthly) body.budget_limits = { monthly: num(f.monthly), currency: "USD" };
    if (f.expires_at) body.expires_at = new Date(f.expires_at).toISOString();
    try { const k = await api("POST", "/v1/api-keys", body); setMade(k); setCopied(false); setF(blank); onCreated(); } catch (err) { setError(err); }
  };
  const copy = async () => { try { await navigator.clipboard.writeText(made.api_key); setCopied(true); } catch { setCopied(false); } };
  return html`<section aria-labelledby="create-h"><h2 id="create-h">Create a key</h2>
    <form class="row" onSubmit=${submit}>
      <label>Name <input name="name" value=${f.name} onInput=${set("name")} maxlength="200" /></label>
      <label>Type <select name="key_type" value=${f.key_type} onChange=${set("key_type")}><option value="user">user</option><option value="team">team</option><option value="organization">organization</option></select></label>
      <label>Access level <select name="access_level" value=${f.access_level} onChange=${set("access_level")}><option value="custom">custom</option><option value="full">full</option><option value="read_only">read_only</option></select></label>
      <label>Organization <input name="organization_id" value=${f.organization_id} onInput=${set("organization_id")} /></label>
      <label>Team <input name="team_id" value=${f.team_id} onInput=${set("team_id")} /></label>
      <label>User <input name="user_id" value=${f.user_id} onInput=${set("user_id")} /></label>
      <label>Requests / minute <input name="per_minute" type="number" min="1" value=${f.per_minute} onInput=${set("per_minute")} /></label>
      <label>Monthly budget (USD) <input name="monthly" type="number" min="0" step="any" value=${f.monthly} onInput=${set("monthly")} /></label>
      <label>Expires <input name="expires_at" type="datetime-local" value=${f.expires_at} onInput=${set("expires_at")} /></label>
      <button class="primary" type="submit">Create key</button>
    </form>
    <${Err} error=${error} />
    ${made ? html`<div class="secret" role="status" data-testid="new-secret">
      <p><b>${made.name}</b> (${made.id}) was created. Its secret is shown <b>once</b>; copy it now:</p>
      <p><code data-testid="secret-value">${made.api_key}</code></p>
      <button type="button" onClick=${copy}>${copied ? "Copied" : "Copy"}</button>
      <button type="button" onClick=${() => setMade(null)}>I have stored it</button>
    </div>` : null}
  </section>`;
}

function EditKey({ k, onDone }) {
  const [f, setF] = useState({ per_minute: k.rate_limits?.per_minute ?? "", monthly: k.budget_limits?.monthly ?? "", daily_tokens: k.token_limits?.daily ?? "" });
  const [error, setError] = useState(null);
  const set = (n) => (e) => setF({ ...f, [n]: e.target.value });
  const save = async (e) => {
    e.preventDefault();
    // PATCH merge-patches these objects (RFC 7396): send only the one field this form shows, and
    // only when it changed. Sending `null` for an empty field deleted the whole object (a per_day
    // rate limit, a daily budget, a monthly token limit) and `currency: "USD"` overwrote the key's.
    const body = {};
    const part = (name, cur, field, v, extra = {}) => {
      if (String(v) === String(cur?.[field] ?? "")) return; // unchanged
      if (v === "") { if (cur) body[name] = { [field]: null }; return; } // clear this limit alone
      body[name] = cur ? { [field]: num(v) } : { [field]: num(v), ...extra }; // a new object names its currency
    };
    part("rate_limits", k.rate_limits, "per_minute", f.per_minute);
    part("budget_limits", k.budget_limits, "monthly", f.monthly, { currency: "USD" });
    part("token_limits", k.token_limits, "daily", f.daily_tokens);
    try { await api("PATCH", `/v1/api-keys/${k.id}`, body); onDone(); } catch (err) { setError(err); }
  };
  return html`<form class="row" onSubmit=${save} aria-label=${`Limits of ${k.name}`}>
    <label>Requests / minute <input type="number" min="1" value=${f.per_minute} onInput=${set("per_minute")} /></label>
    <label>Monthly budget (USD) <input type="number" min="0" step="any" value=${f.monthly} onInput=${set("monthly")} /></label>
    <label>Tokens / day <input type="number" min="1" value=${f.daily_tokens} onInput=${set("daily_tokens")} /></label>
    <button class="primary" type="submit">Save limits</button> <button type="button" onClick=${onDone}>Cancel</button>
    <${Err} error=${error} />
  </form>`;
}

function KeyDetail({ k, reload }) {
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState(null);
  const { data: d } = useLoad(() => get(`/v1/api-keys/${k.id}`), [k.id, k.updated_at]);
  const u = d?.usage;
  const managed = k.managed_by !== "api";
  const revoke = async () => { try { await api("DELETE", `/v1/api-keys/${k.id}`); setConfirming(false); reload(); } catch (err) { setError(err); } };
  return html`<section class="card" aria-labelledby="detail-h" data-testid="key-detail">
    <h2 id="detail-h">${k.name} <span class="note">${k.id}</span> <${Badge} v=${k.status} /></h2>
    ${k.degraded ? html`<p class="note" data-testid="degraded">Degraded (${k.degraded.reason}): ${k.degraded.message}</p>` : null}
    ${u ? html`<div class="row">
      <span>Spend this month <${Bar} used=${u.month.spend ?? u.month.spend_usd} limit=${k.budget_limits?.monthly} label="monthly budget" fmt=${usd} /></span>
      <span>Spend today <${Bar} used=${u.today.spend ?? u.today.spend_usd} limit=${k.budget_limits?.daily} label="daily budget" fmt=${usd} /></span>
      <span>Tokens today <${Bar} used=${u.today.tokens} limit=${k.token_limits?.daily} label="daily tokens" /></span>
      <span>Requests today ${int(u.today.requests)}${k.rate_limits?.per_minute ? html` <span class="note">(limit ${k.rate_limits.per_minute}/min)</span>` : ""}</span>
    </div>` : null}
    ${managed
      ? html`<p class="note" data-testid="managed">Read-only here: managed by ${k.managed_by}. Change it in its manifest.</p>`
      : k.status === "revoked" ? html`<p class="note">Revoked ${when(k.revoked_at)}.</p>`
      : html`<div class="row">
          ${editing ? html`<${EditKey} k=${k} onDone=${() => { setEditing(false); reload(); }} />` : html`<button type="button" onClick=${() => setEditing(true)}>Edit limits</button>`}
          ${confirming
            ? html`<span role="alertdialog" aria-label="Confirm revocation">Revoke ${k.name}? Requests with it are refused at once. <button class="danger" type="button" onClick=${revoke}>Yes, revoke</button> <button type="button" onClick=${() => setConfirming(false)}>Cancel</button></span>`
            : html`<button class="danger" type="button" onClick=${() => setConfirming(true)}>Revoke…</button>`}
        </div>`}
    <${Err} error=${error} />
  </section>`;
}

export default function Keys({ me }) {
  const { data, error, reload } = useLoad(async () => {
    const [keys, month] = await Promise.all([get("/v1/api-keys"), get(`/v1/usage?group_by=key&from=${monthStart().toISOString()}`).catch(() => ({ data: [] }))]);
    return { keys: keys.keys, month: new Map(month.data.map((r) => [r.key_id, r])) };
  });
  const [sel, setSel] = useState(null);
  const keys = data?.keys ?? [];
  const selected = sel && keys.find((k) => k.id === sel);
  const cols = [
    { label: "Name", render: (k) => k.name },
    { label: "Id", render: (k) => html`<code>${k.id}</code>` },
    // degraded: the key works, but part of it (its webhook secret reference) does not resolve
    { label: "Status", render: (k) => html`<${Badge} v=${k.status} />${k.degraded ? html` <span class="note" title=${k.degraded.message}>degraded</span>` : null}` },
    { label: "Type", key: "key_type" },
    { label: "Access", key: "access_level" },
    { label: "Owner", render: (k) => (k.managed_by === "api" ? "api" : html`managed by ${k.managed_by}`) },
    { label: "Organization / team", render: (k) => [k.organization_id, k.team_id].filter(Boolean).join(" / ") || "–" },
    { label: "Expires", render: (k) => (k.expires_at ? when(k.expires_at) : "never") },
    { label: "Spend this month", render: (k) => html`<${Bar} used=${data.month.get(k.id)?.spend ?? 0} limit=${k.budget_limits?.monthly} label=${`monthly budget of ${k.name}`} fmt=${usd} />` },
    { label: "Requests this month", num: true, render: (k) => int(data.month.get(k.id)?.requests ?? 0) },
  ];
  return html`<h1>API keys</h1>
    ${me.key.access_level !== "read_only" ? html`<${CreateKey} onCreated=${reload} />` : html`<p class="note">This key is read_only: it cannot create or change keys.</p>`}
    <h2>Keys</h2>
    <${Err} error=${error} />
    ${data ? html`<p class="note">Select a key for its usage against its limits, to edit or revoke it.</p>
      <${Table} rows=${keys} cols=${cols} onRow=${(k) => setSel(k.id)} caption="API keys" empty="no keys yet" />` : null}
    ${selected ? html`<${KeyDetail} k=${selected} reload=${reload} />` : null}`;
}
