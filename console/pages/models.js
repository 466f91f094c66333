// Models: what the gateway serves (GET /v1/models) and the local pool (loaded, leases).
import { html } from "/console/vendor/preact-htm.js";
import { get } from "/console/lib/api.js";
import { Err, Table, useLoad } from "/console/lib/ui.js";

export default function Models() {
  const models = useLoad(() => get("/v1/models"));
  const pool = useLoad(() => get("/admin/cache-stats"));
  const stats = new Map((pool.data?.models ?? []).map((m) => [m.name ?? m.model, m]));
  return html`<h1>Models</h1>
    <${Err} error=${models.error} />
    <${Table} rows=${models.data?.data ?? []} caption="models" empty="no models" cols=${[
      { label: "Model", render: (m) => html`<code>${m.id}</code>` },
      { label: "Served by", render: (m) => m.owned_by ?? "–" },
    ]} />
    <h2>Local models</h2>
    <${Err} error=${pool.error} />
    <${Table} rows=${pool.data?.registered ?? []} caption="local models" empty="no local models" cols=${[
      { label: "Name", render: (m) => m.name },
      { label: "File", render: (m) => m.file },
      { label: "Loaded", render: (m) => (m.loaded ? "yes" : "no") },
      { label: "Active leases", num: true, render: (m) => stats.get(m.name)?.activeLeases ?? 0 },
      { label: "Idle unload (s)", num: true, render: (m) => m.idleUnloadSeconds ?? "–" },
    ]} />`;
}
