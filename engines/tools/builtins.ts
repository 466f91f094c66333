// Tools svc itself offers. They are protected: an MCP service offering a tool that would get
// the same catalog name gets a hashed name instead (engines/mcp/names.ts). svc_time and
// svc_models are read-only and exposable to external callers; svc_memory_search is for agents
// only (not exposable over /mcp by default) and reads only the calling agent's memory.
import type { ToolCallOptions, ToolCallResult, ToolInfo } from "./types";

export const MEMORY_TOOL = "svc_memory_search";

export interface BuiltinTool {
  info: ToolInfo;
  run(args: Record<string, unknown>, opts?: ToolCallOptions): Promise<ToolCallResult> | ToolCallResult;
}

export interface MemoryHitView {
  kind: string;
  id: number;
  text: string;
  score: number;
  status?: string;
}

export interface BuiltinDeps {
  /** models served right now: local GGUF models and providers' models */
  models(): Array<{ id: string; provider: string; type: string }>;
  now?: () => Date;
  /** the calling agent's memory (absent: no memory engine) */
  memorySearch?(agent: string, query: string, kind: "facts" | "episodes" | "transcript" | "all", limit: number): Promise<MemoryHitView[]>;
}

const text = (t: string, isError = false): ToolCallResult => ({ content: [{ type: "text", text: t }], isError });

function info(name: string, description: string, inputSchema: Record<string, unknown>): ToolInfo {
  return { name, description, inputSchema, source: { kind: "builtin" }, exposable: true, protected: true, annotations: { readOnlyHint: true } };
}

export function builtinTools(d: BuiltinDeps): BuiltinTool[] {
  const now = d.now ?? (() => new Date());
  return [
    {
      info: info("svc_time", "Current date and time, in UTC or in an IANA time zone (e.g. Europe/Paris).", {
        type: "object",
        properties: { timezone: { type: "string", description: "IANA time zone name; default UTC" } },
        additionalProperties: false,
      }),
      run(args) {
        const zone = typeof args.timezone === "string" && args.timezone ? args.timezone : "UTC";
        const t = now();
        let local: string;
        try {
          local = new Intl.DateTimeFormat("en-CA", {
            timeZone: zone,
            year: "numeric",
            month: "2-digit",
            day: "2-digit",
            hour: "2-digit",
            minute: "2-digit",
            second: "2-digit",
            hour12: false,
            weekday: "long",
            timeZoneName: "shortOffset",
          }).format(t);
        } catch {
          return text(`unknown time zone ${JSON.stringify(zone)}; use an IANA name such as Europe/Paris`, true);
        }
        const body = { iso: t.toISOString(), timezone: zone, local };
        return { content: [{ type: "text", text: JSON.stringify(body) }], isError: false, structuredContent: body };
      },
    },
    {
      info: info("svc_models", "Models this svc serves right now (local GGUF models and providers' models).", {
        type: "object",
        properties: {},
        additionalProperties: false,
      }),
      run() {
        const models = d.models();
        const body = { models };
        return { content: [{ type: "text", text: JSON.stringify(body) }], isError: false, structuredContent: body };
      },
    },
    {
      info: {
        ...info(MEMORY_TOOL, "Search your long-term memory of earlier conversations: pinned facts, episode summaries and transcript.", {
          type: "object",
          properties: {
            query: { type: "string", description: "What to look for" },
            kind: { type: "string", enum: ["all", "facts", "episodes", "transcript"], description: "Which material; default all" },
            limit: { type: "integer", minimum: 1, maximum: 20, description: "At most this many results; default 5" },
          },
          required: ["query"],
          additionalProperties: false,
        }),
        exposable: false,
      },
      async run(args, opts) {
        if (!opts?.agent) return text(`${MEMORY_TOOL} is available to agents only: it searches the calling agent's own memory`, true);
        if (!d.memorySearch) return text("the memory system is not running", true);
        const kind = (typeof args.kind === "string" ? args.kind : "all") as "facts" | "episodes" | "transcript" | "all";
        const limit = typeof args.limit === "number" ? args.limit : 5;
        const results = await d.memorySearch(opts.agent, String(args.query ?? ""), kind, limit);
        const body = { results };
        return { content: [{ type: "text", text: results.length ? results.map((r) => `[${r.kind}] ${r.text}`).join("\n") : "nothing found in memory" }], isError: false, structuredContent: body };
      },
    },
  ];
}
