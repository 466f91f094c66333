// The agent tests' tool catalog: the REAL server-everything connected through an McpServer
// manifest and svc's own MCP engine (engines/mcp), its tools named `everything_<tool>`. A thin
// spy in front of the engine's catalog counts calls and sees aborts, so tests can assert that
// a tool ran (or did not); hiding a tool goes through the manifest (tools.<name>.enabled: false),
// which is what a user would do.
import { createRequire } from "node:module";
import path from "node:path";
import type { TestSvc } from "../helpers/svc";
import type { ToolCallOptions, ToolRegistry } from "../../engines/tools/types";
import { until } from "../helpers/http";

const require = createRequire(import.meta.url);

export interface SpiedTools extends ToolRegistry {
  /** how many calls were started per catalog name */
  calls: Map<string, number>;
  /** calls whose AbortSignal fired */
  aborted: string[];
  /** disable these catalog tools in the McpServer manifest (a refresh drops them); [] restores all */
  setHidden(names: string[]): Promise<void>;
  close(): Promise<void>;
}

export function everythingSpec(disabled: string[] = []): Record<string, unknown> {
  const pkg = path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json"));
  return {
    transport: "stdio",
    command: process.execPath,
    args: [path.join(pkg, "dist", "index.js"), "stdio"],
    tools: Object.fromEntries(disabled.map((t) => [t, { enabled: false }])),
  };
}

/** Connect server-everything as McpServer `everything` on a running test svc and put the spy in
 * front of the engine's catalog. */
export async function everythingTools(s: TestSvc, owner = "config:test"): Promise<SpiedTools> {
  const apply = (disabled: string[]) => s.svc.store.write([{ op: "upsert", kind: "McpServer", name: "everything", owner, spec: everythingSpec(disabled) }]);
  await apply([]);
  await until(() => !!s.svc.engines.tools?.get("everything_echo"), 30_000);
  const real = s.svc.engines.tools!;
  const calls = new Map<string, number>();
  const aborted: string[] = [];
  const spy: SpiedTools = {
    calls,
    aborted,
    list: () => real.list(),
    get: (name) => real.get(name),
    onChange: (l) => real.onChange(l),
    async call(name: string, args: Record<string, unknown>, opts: ToolCallOptions = {}) {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      opts.signal?.addEventListener("abort", () => aborted.push(name), { once: true });
      return real.call(name, args, opts);
    },
    async setHidden(names) {
      await apply(names.map((n) => n.replace(/^everything_/, "")));
      await until(() => names.every((n) => !real.get(n)) && (names.length > 0 || !!real.get("everything_echo")), 30_000);
    },
    async close() {
      /* the svc closes its MCP connections when it stops */
    },
  };
  if (real.resolve) spy.resolve = (name) => real.resolve!(name);
  s.svc.engines.tools = spy;
  return spy;
}
