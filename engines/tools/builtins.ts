// Tools svc itself offers. They are protected: an MCP service offering a tool that would get
// the same catalog name gets a hashed name instead (engines/mcp/names.ts). Both are read-only
// and exposable to external callers.
import type { ToolCallResult, ToolInfo } from "./types";

export interface BuiltinTool {
  info: ToolInfo;
  run(args: Record<string, unknown>): Promise<ToolCallResult> | ToolCallResult;
}

export interface BuiltinDeps {
  /** models served right now: local GGUF models and providers' models */
  models(): Array<{ id: string; provider: string; type: string }>;
  now?: () => Date;
}

const text = (t: string, isError = false): ToolCallResult => ({ content: [{ type: "text", text: t }], isError });

function info(name: string, description: string, inputSchema: Record<string, unknown>): ToolInfo {
  return { name, description, inputSchema, source: { kind: "builtin" }, exposable: true, protected: true };
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
  ];
}
