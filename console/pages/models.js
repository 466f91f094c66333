// Models: what the gateway serves (GET /v1/models) and the local pool (loopback
// /admin/cache-stats): each local model, loaded or not, and the leases its generations hold now.
import { html } from "/console/vendor/preact-htm.js";
import { get } from "/console/lib/api.js";
import { Err, Table, int, useLoad } from "/console/lib/ui.js";

export default function Models() {
  const models = useLoad(() => get("/v1/models"));
  const pool = useLoad(() => get("/admin/cache-stats"));
  const stats = new Map((pool.data?.models ?? []).map((m) => [m.name, m]));
  return html`<h1>Models</h1>
    <${Err} error=${models.error} />
    <${Table} rows=${models.data?.data ?? []} caption="models" empty="no models" cols=${[
      { label: "Model", render: (m) => html`<code>${m.id}</code>` },
      { label: "Served by", render: (m) => m.owned_by ?? "–" },
    ]} />
    <h2>Local models</h2>
    <p class="note">${int(pool.data?.totals?.loaded ?? 0)} loaded · ${int(pool.data?.totals?.activeLeases ?? 0)} active leases · ${int(pool.data?.totals?.queued ?? 0)} queued <button type="button" onClick=${pool.reload}>Refresh</button></p>
    <${Err} error=${pool.error} />
    <div data-testid="local-models"><${Table} rows=${pool.data?.registered ?? []} caption="local models" empty="no local models" cols=${[
      { label: "Name", render: (m) => m.name },
      { label: "File", render: (m) => html`<span title=${m.file}>${String(m.file).split("/").pop()}</span>` },
      { label: "Loaded", render: (m) => (m.loaded ? "yes" : "no") },
      { label: "Active leases", num: true, render: (m) => stats.get(m.name)?.activeLeases ?? 0 },
      { label: "Sequences", num: true, render: (m) => stats.get(m.name)?.sequences ?? "–" },
      { label: "Generations", num: true, render: (m) => stats.get(m.name)?.generations ?? 0 },
      { label: "Idle unload (s)", num: true, render: (m) => m.idleUnloadSeconds ?? "–" },
    ]} /></div>`;
}
