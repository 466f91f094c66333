// Overview: requests and errors per minute (last hour), spend today and this month, top keys and models,
// and the response cache's hit rate and spend saved (/admin/response-cache, loopback; docs/cache.md).
import { html } from "/console/vendor/preact-htm.js";
import { get, qs } from "/console/lib/api.js";
import { Chart, Err, TopChart, dayStart, int, monthStart, useLoad, usd } from "/console/lib/ui.js";

const sum = (rows, f) => rows.reduce((a, r) => a + (r[f] ?? 0), 0);

export default function Overview() {
  const { data, error } = useLoad(async () => {
    const hourAgo = new Date(Date.now() - 3600_000);
    const [perMin, today, month, keys, models] = await Promise.all([
      get(`/v1/usage?${qs({ group_by: "minute", from: hourAgo.toISOString() })}`),
      get(`/v1/usage?${qs({ from: dayStart().toISOString() })}`),
      get(`/v1/usage?${qs({ from: monthStart().toISOString() })}`),
      get(`/v1/usage?${qs({ group_by: "key", from: monthStart().toISOString() })}`),
      get(`/v1/usage?${qs({ group_by: "model", from: monthStart().toISOString() })}`),
    ]);
    const cache = await get("/admin/response-cache").catch(() => null); // not on loopback: no cache cards
    return { perMin: perMin.data, today: today.data, month: month.data, keys: keys.data, models: models.data, cache };
  });
  if (error) return html`<h1>Overview</h1><${Err} error=${error} />`;
  if (!data) return html`<h1>Overview</h1><p class="loading">Loading…</p>`;
  // every minute of the last hour, zero where nothing happened
  const now = Math.floor(Date.now() / 60_000) * 60;
  const x = Array.from({ length: 60 }, (_, i) => now - (59 - i) * 60);
  const by = new Map(data.perMin.map((r) => [Date.parse(r.minute) / 1000, r]));
  const reqs = x.map((t) => by.get(t)?.requests ?? 0);
  const errs = x.map((t) => { const r = by.get(t); return r ? r.errors + Object.values(r.refusals).reduce((a, b) => a + b, 0) : 0; });
  const top = (rows) => [...rows].sort((a, b) => b.requests - a.requests).slice(0, 8);
  return html`<h1>Overview</h1>
    <div class="cards">
      <div class="card"><div class="v" data-testid="requests-hour">${int(sum(data.perMin, "requests"))}</div><div class="l">requests, last hour</div></div>
      <div class="card"><div class="v">${int(errs.reduce((a, b) => a + b, 0))}</div><div class="l">errors and refusals, last hour</div></div>
      <div class="card"><div class="v">${usd(sum(data.today, "spend"))}</div><div class="l">spend today (UTC)</div></div>
      <div class="card"><div class="v">${usd(sum(data.month, "spend"))}</div><div class="l">spend this month</div></div>
      ${data.cache && data.cache.hits + data.cache.misses > 0 ? html`
        <div class="card"><div class="v" data-testid="cache-hit-rate">${(data.cache.hit_rate * 100).toFixed(1)}%</div><div class="l">response cache hit rate (${int(data.cache.hits)} hits)</div></div>
        <div class="card"><div class="v" data-testid="cache-saved">${usd(data.cache.saved_usd)}</div><div class="l">spend saved by the cache</div></div>` : null}
    </div>
    <h2>Requests per minute</h2>
    <${Chart} title="Requests and errors per minute, last hour" x=${x} series=${[{ label: "requests", values: reqs }, { label: "errors", values: errs, stroke: "#b42318" }]} />
    <div class="grid2">
      <div><h2>Top keys this month</h2><${TopChart} title="Requests by key" rows=${top(data.keys)} label=${(r) => r.key_name ?? r.key_id ?? "(none)"} value=${(r) => r.requests} /></div>
      <div><h2>Top models this month</h2><${TopChart} title="Requests by model" rows=${top(data.models)} label=${(r) => r.model ?? "(none)"} value=${(r) => r.requests} /></div>
    </div>`;
}
