// The MCP engine of one running svc (boot/start.ts creates it; the McpServer controller drives it).
import type { Host } from "../host";
import type { Gateway } from "../gateway";
import type { MemoryEngine } from "../memory/engine";

/** Where tool calls are counted (engines/metrics implements it; observers sit above the engines). */
export interface ToolCallSink {
  toolCall(service: string, outcome: string): void;
}

/** What the MCP engine uses: the gateway's model listing and memory search (built-in tools), metrics. */
export type McpHost = Host & { engines: { gateway?: Gateway; memory?: MemoryEngine; metrics?: ToolCallSink } };
import { builtinTools } from "../tools/builtins";
import { McpEngine } from "./engine";
import { KINDS } from "../memory/types";

export { McpEngine } from "./engine";
export type { ServiceState } from "./engine";

export function createMcpEngine(svc: McpHost): McpEngine {
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
