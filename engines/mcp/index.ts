// The MCP engine of one running svc (api/server.ts creates it; the McpServer controller drives it).
import type { Svc } from "../svc";
import { builtinTools } from "../tools/builtins";
import { McpEngine } from "./engine";
import { KINDS } from "../memory/types";

export { McpEngine } from "./engine";
export type { ServiceState } from "./engine";

export function createMcpEngine(svc: Svc): McpEngine {
  return new McpEngine({
    log: svc.log,
    home: svc.home,
    builtins: builtinTools({
      models: () =>
        (svc.engines.gateway?.router.listing() ?? []).map((m) => ({ id: m.model, provider: m.provider, type: m.type })),
      memorySearch: async (agent, query, kind, limit) => {
        const m = svc.engines.memory;
        if (!m) return [];
        const kinds = kind === "all" ? KINDS : [kind === "facts" ? "fact" : kind === "episodes" ? "episode" : "transcript"] as const;
        return (await m.search(agent, kinds, query, limit)).map((h) => ({ kind: h.kind, id: h.id, text: h.text, score: Math.round(h.score * 1000) / 1000, ...(h.status ? { status: h.status } : {}) }));
      },
    }),
    onStatus: (name) => svc.control?.enqueue({ kind: "McpServer", name }),
    onCall: (service, outcome) => svc.engines.metrics?.toolCall(service, outcome),
  });
}
