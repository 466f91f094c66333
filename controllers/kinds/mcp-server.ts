// The McpServer controller: hands each object's spec to the MCP engine (engines/mcp), which holds
// the connection, and reports what the engine sees. The engine enqueues the object whenever its
// connection changes state, so status follows connects, refreshes and failures.
//
//   Ready=True  Connected          connected; "N tools (M exposed)"
//   Ready=True  NoTools            connected, but the service advertises no tools (a warning)
//   Ready=True  Disabled           enabled: false; settings kept, no connection, no tools
//   Ready=True  NotConnected       autoConnect: false; connects on the first call of one of its tools
//   Ready=False Connecting         first connect (or a reconnect) under way
//   Ready=False InvalidSpec | SecretMissing | ConnectionRefused | AuthRejected | DiscoveryTimeout
//               connection failed; retried with backoff (1 s doubling to 60 s)
//   Ready=False SchemaError        connected, but some tools' inputSchema is invalid (left out)
//   Ready=False ExecutionDenied | ToolGone   the last call failed so; the next successful call clears it
// Deleting the object closes the connection and removes its tools (finalize).
import type { KindController, ReadyCondition } from "../types";
import type { McpEngine } from "../../engines/mcp/engine";
import { specProblem } from "../../engines/mcp/spec";

export function mcpServerController(engine: McpEngine): KindController<"McpServer"> {
  return {
    kind: "McpServer",
    async reconcile(obj) {
      const spec = obj.spec;
      const problem = specProblem(spec);
      if (problem) {
        await engine.drop(obj.name);
        return { status: "False", reason: "InvalidSpec", message: `${problem}; hint: fix the McpServer manifest` };
      }
      await engine.apply(obj.name, spec);
      if (spec.enabled === false) return { status: "True", reason: "Disabled", message: "disabled: settings kept, no connection and no tools", extra: { tools: 0, exposed: 0 } };
      return condition(engine, obj.name);
    },
    async finalize(obj) {
      await engine.drop(obj.name);
    },
  };
}

function condition(engine: McpEngine, name: string): ReadyCondition {
  const s = engine.state(name);
  if (!s) return { status: "False", reason: "Connecting", message: "not started yet" };
  const extra: Record<string, unknown> = { tools: s.tools, exposed: s.exposed, endpoint: s.where };
  if (s.serverName) extra.serverName = s.serverName;
  const counts = `${s.tools} tool${s.tools === 1 ? "" : "s"} (${s.exposed} exposed)`;
  switch (s.phase) {
    case "idle":
      return { status: "True", reason: "NotConnected", message: "autoConnect is false: connects on the first call naming one of its tools", extra };
    case "connecting":
      return { status: "False", reason: "Connecting", message: `connecting to ${s.where}`, extra };
    case "failed": {
      const f = s.failure!;
      const retry = s.retryAt ? `; retrying in ${Math.max(1, Math.round((s.retryAt - Date.now()) / 1000))} s` : "";
      const kept = s.tools ? `; ${counts} kept from the last discovery` : "";
      return { status: "False", reason: f.reason, message: `${f.message}${retry}${kept}; hint: ${f.hint}`, extra };
    }
    case "ready":
      break;
    default:
      return { status: "False", reason: "Connecting", message: `state ${s.phase}`, extra };
  }
  if (s.callFailure) {
    const f = s.callFailure;
    return { status: "False", reason: f.reason, message: `${f.message}; ${counts}; hint: ${f.hint}`, extra };
  }
  if (s.schemaErrors.length) {
    return { status: "False", reason: "SchemaError", message: `connected; left out ${s.schemaErrors.join("; ")}; ${counts}; hint: the service's tool schemas must be valid JSON Schema objects`, extra };
  }
  if (s.tools === 0) return { status: "True", reason: "NoTools", message: `connected to ${s.where}, but the service advertises no tools`, extra };
  return { status: "True", reason: "Connected", message: `${counts} from ${s.where}`, extra };
}
