// Test-only tool catalog until the MCP engine lands: the REAL server-everything over stdio
// through the official SDK client, its tools named `everything_<tool>`, behind the shared
// ToolRegistry contract (engines/tools/types.ts) the agent loop is written against.
import { createRequire } from "node:module";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolError, type ToolCallOptions, type ToolCallResult, type ToolInfo, type ToolRegistry } from "../../engines/tools/types";

const require = createRequire(import.meta.url);

export interface StdioTools extends ToolRegistry {
  /** how many calls were started per catalog name */
  calls: Map<string, number>;
  /** calls whose AbortSignal fired */
  aborted: string[];
  /** drop or add tools and notify listeners, like a catalog refresh */
  setHidden(names: string[]): void;
  close(): Promise<void>;
}

export async function everythingTools(prefix = "everything"): Promise<StdioTools> {
  const pkg = path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json"));
  const transport = new StdioClientTransport({ command: process.execPath, args: [path.join(pkg, "dist", "index.js"), "stdio"], stderr: "ignore" });
  const client = new Client({ name: "svc-agents-test", version: "0.0.0" });
  await client.connect(transport);
  const listed = (await client.listTools()).tools;
  const all: ToolInfo[] = listed.map((t) => ({
    name: `${prefix}_${t.name}`,
    description: t.description,
    inputSchema: t.inputSchema as Record<string, unknown>,
    source: { kind: "mcp", server: prefix, tool: t.name },
    exposable: true,
    protected: false,
  }));
  let hidden = new Set<string>();
  const listeners = new Set<() => void>();
  const calls = new Map<string, number>();
  const aborted: string[] = [];
  const visible = () => all.filter((t) => !hidden.has(t.name));
  return {
    calls,
    aborted,
    list: visible,
    get: (name) => visible().find((t) => t.name === name),
    async call(name: string, args: Record<string, unknown>, opts: ToolCallOptions = {}): Promise<ToolCallResult> {
      const info = visible().find((t) => t.name === name);
      if (!info || info.source.kind !== "mcp") throw new ToolError("tool_not_found", `no tool ${name} in the catalog`);
      calls.set(name, (calls.get(name) ?? 0) + 1);
      opts.signal?.addEventListener("abort", () => aborted.push(name), { once: true });
      const r = await client.callTool({ name: info.source.tool, arguments: args }, undefined, {
        signal: opts.signal,
        onprogress: opts.onProgress ? (p) => opts.onProgress!({ progress: p.progress, total: p.total, message: p.message }) : undefined,
        timeout: 120_000,
      });
      return { content: (r.content as ToolCallResult["content"]) ?? [], isError: r.isError === true, structuredContent: r.structuredContent as Record<string, unknown> | undefined };
    },
    onChange(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    setHidden(names) {
      hidden = new Set(names);
      for (const l of listeners) l();
    },
    async close() {
      await client.close();
    },
  };
}
