// MCP servers: each McpServer object's Ready condition (from the loopback status route: reason and
// message carry the tool counts) and the tools it exposes (GET /mcp/tools, named <server>_<tool>).
import { html } from "/console/vendor/preact-htm.js";
import { get } from "/console/lib/api.js";
import { Badge, Err, Table, useLoad } from "/console/lib/ui.js";

export default function Mcp() {
  const status = useLoad(() => get("/admin/config/status"));
  const tools = useLoad(() => get("/mcp/tools"));
  const servers = (status.data?.objects ?? []).filter((o) => o.kind === "McpServer");
  const exposed = tools.data?.tools ?? [];
  const of = (o) => exposed.filter((t) => t.name.startsWith(`${o.name}_`)).map((t) => t.name);
  return html`<h1>MCP servers</h1>
    <${Err} error=${status.error} />
    <div data-testid="mcp-servers"><${Table} rows=${servers} caption="MCP servers" empty="no McpServer objects" cols=${[
      { label: "Name", render: (o) => o.name },
      { label: "Ready", render: (o) => (o.ready ? html`<${Badge} v=${o.ready.status} /> ${o.ready.reason ?? ""}` : "–") },
      { label: "Message", render: (o) => o.ready?.message ?? "" },
      { label: "Exposed tools", render: (o) => of(o).map((n) => html`<code>${n}</code> `) },
      { label: "Owner", render: (o) => o.owner ?? "–" },
    ]} /></div>
    <h2>Exposed tools</h2>
    <${Err} error=${tools.error} />
    <div data-testid="mcp-tools"><${Table} rows=${exposed} caption="exposed tools" empty="no tools exposed" cols=${[
      { label: "Tool", render: (t) => html`<code>${t.name}</code>` },
      { label: "Description", render: (t) => t.description },
      { label: "Read-only", render: (t) => (t.annotations?.readOnlyHint === true ? "yes" : t.annotations?.readOnlyHint === false ? "no" : "–") },
    ]} /></div>`;
}
