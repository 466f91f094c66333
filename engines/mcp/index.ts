// The MCP engine of one running svc (api/server.ts creates it; the McpServer controller drives it).
import type { Svc } from "../svc";
import { builtinTools } from "../tools/builtins";
import { McpEngine } from "./engine";

export { McpEngine } from "./engine";
export type { ServiceState } from "./engine";

export function createMcpEngine(svc: Svc): McpEngine {
  return new McpEngine({
    log: svc.log,
    builtins: builtinTools({
      models: () =>
        (svc.engines.gateway?.router.listing() ?? []).map((m) => ({ id: m.model, provider: m.provider, type: m.type })),
    }),
    onStatus: (name) => svc.control?.enqueue({ kind: "McpServer", name }),
    onCall: (service, outcome) => svc.engines.metrics?.toolCall(service, outcome),
  });
}
