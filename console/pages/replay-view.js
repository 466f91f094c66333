// The plan's replay (docs/replay.md): what the proposed state does to the traffic of a window,
// per key (newly refused by reason with the first time, newly allowed, rerouted, spend, alerts)
// and rolled up per team and organization, under the one summary line.
import { html } from "/console/vendor/preact-htm.js";
import { int, when } from "/console/lib/ui.js";

const usd = (micros) => {
  const a = Math.abs(micros);
  return `${micros < 0 ? "-" : ""}$${a !== 0 && a < 10_000 ? (a / 1e6).toFixed(6) : (Math.round(a / 1e4) / 100).toFixed(2)}`;
};

const changed = (k) => k.newRefusals.length || k.newlyAdmitted || k.reroutes.length || k.spend.currentMicros !== k.spend.proposedMicros
  || Object.values(k.alerts).some((c) => c.current !== c.proposed) || Object.values(k.webhooks).some((c) => c.current !== c.proposed);

function KeyRow({ k }) {
  const events = (m) => Object.entries(m).filter(([, c]) => c.current !== c.proposed).map(([ev, c]) => `${ev} ${c.current} → ${c.proposed}`).join(", ");
  return html`<tr>
    <td><b>${k.name ?? k.key}</b> <span class="note">${k.key}</span></td>
    <td>${int(k.requests)}</td>
    <td>${k.newRefusals.map((r) => html`<div>${int(r.count)} <code>${r.code}${r.limit ? ` (${r.limit})` : ""}</code> <span class="note">first ${when(r.first)}</span></div>`)}</td>
    <td>${k.newlyAdmitted ? int(k.newlyAdmitted) : ""}</td>
    <td>${k.reroutes.map((r) => html`<div>${int(r.count)}: ${r.from} → ${r.to}</div>`)}</td>
    <td>${usd(k.spend.currentMicros)} → ${usd(k.spend.proposedMicros)}</td>
    <td>${events(k.alerts)}${events(k.webhooks) ? html`<div class="note">webhooks: ${events(k.webhooks)}</div>` : ""}</td>
  </tr>`;
}

export function ReplayView({ replay: r }) {
  const keys = r.keys.filter(changed);
  const rollups = [...r.teams.map((t) => ["team", t]), ...r.organizations.map((o) => ["organization", o])].filter(([, t]) => t.newRefusals || t.newlyAdmitted || t.rerouted || t.spend.currentMicros !== t.spend.proposedMicros);
  return html`<section aria-labelledby="replay-h" data-testid="replay">
    <h2 id="replay-h">Replay of ${when(r.window.from)} to ${when(r.window.to)}</h2>
    <p role="status" data-testid="replay-summary"><b>${r.summary}</b></p>
    ${r.window.availableFrom ? html`<p class="note">The store holds entries from ${when(r.window.availableFrom)} only (${Math.round(r.window.coverage * 100)}% of the window).</p>` : null}
    ${keys.length ? html`<table><caption>Keys whose traffic changes</caption><thead><tr>
      <th scope="col">Key</th><th scope="col">Requests</th><th scope="col">Newly refused</th><th scope="col">Newly allowed</th><th scope="col">Rerouted</th><th scope="col">Spend</th><th scope="col">Alerts</th></tr></thead>
      <tbody>${keys.map((k) => html`<${KeyRow} k=${k} />`)}</tbody></table>` : null}
    ${rollups.length ? html`<table><caption>Teams and organizations</caption><thead><tr><th scope="col"></th><th scope="col">Keys</th><th scope="col">Newly refused</th><th scope="col">Newly allowed</th><th scope="col">Rerouted</th><th scope="col">Spend</th></tr></thead>
      <tbody>${rollups.map(([kind, t]) => html`<tr><td>${kind} <b>${t.id}</b></td><td>${int(t.keys)}</td><td>${int(t.newRefusals)}</td><td>${int(t.newlyAdmitted)}</td><td>${int(t.rerouted)}</td><td>${usd(t.spend.currentMicros)} → ${usd(t.spend.proposedMicros)}</td></tr>`)}</tbody></table>` : null}
  </section>`;
}
