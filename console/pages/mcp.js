// MCP servers: their Ready condition (from the loopback status route) and the exposed tools.
import { html } from "/console/vendor/preact-htm.js";
import { get } from "/console/lib/api.js";
import { Badge, Err, Table, useLoad } from "/console/lib/ui.js";

export default function Mcp() {
  const status = useLoad(() => get("/admin/config/status"));
  const tools = useLoad(() => get("/mcp/tools"));
  const servers = (status.data?.objects ?? []).filter((o) => o.kind === "McpServer");
  const ready = (o) => (o.status?.conditions ?? o.conditions ?? []).find((c) => c.type === "Ready");
  return html`<h1>MCP servers</h1>
    <${Err} error=${status.error} />
    <${Table} rows=${servers} caption="MCP servers" empty="no McpServer objects" cols=${[
      { label: "Name", render: (o) => o.name },
      { label: "Ready", render: (o) => { const c = ready(o); return c ? html`<${Badge} v=${c.status} /> ${c.reason ?? ""}` : "–"; } },
      { label: "Message", render: (o) => ready(o)?.message ?? "" },
      { label: "Owner", render: (o) => o.owner ?? "–" },
    ]} />
    <h2>Exposed tools</h2>
    <${Err} error=${tools.error} />
    <${Table} rows=${tools.data?.tools ?? []} caption="exposed tools" empty="no tools exposed" cols=${[
      { label: "Tool", render: (t) => html`<code>${t.name}</code>` },
      { label: "Description", render: (t) => t.description },
    ]} />`;
}
