// Shared set-up of the agent tests: a real svc (gateway fixtures), the real server-everything as
// the tool catalog (an McpServer manifest through svc's MCP engine), a scripted stand-in provider, and helpers for agents and tasks.
import { startEnv, type Env } from "../gateway/fixtures";
import { until } from "../helpers/http";
import { pollTask } from "../helpers/tasks";
import { everythingTools, type SpiedTools } from "./mcp-tools";
import { scriptedProvider, type ScriptedProvider } from "./scripted";

export interface AgentEnv extends Env {
  tools: SpiedTools;
  up: ScriptedProvider;
  /** apply an Agent (defaultModel defaults to the script model of the same name) */
  agent(name: string, spec?: Record<string, unknown>): Promise<void>;
  /** wait for an object's Ready condition to reach `status` */
  ready(kind: string, name: string, status?: "True" | "False"): Promise<any>;
  /** poll a task until `cond` holds */
  poll(id: string, cond: (t: any) => boolean, timeoutMs?: number, key?: string): Promise<any>;
}

export async function startAgentEnv(opts: { home?: string; models?: string[] } = {}): Promise<AgentEnv> {
  const env = await startEnv({ home: opts.home });
  const tools = await everythingTools(env.svc);
  const up = await scriptedProvider();
  const models = opts.models ?? [];
  await env.apply([{ kind: "Provider", name: "scripted", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 10, models: models.map((name) => ({ name, inputPerMillion: 1, outputPerMillion: 2 })) } }]);
  const ready = async (kind: string, name: string, status: "True" | "False" = "True") => {
    let last: any;
    await until(() => {
      const o = env.svc.svc.store.get(kind, name);
      last = o?.status.conditions?.find((c) => c.type === "Ready");
      return !!o && o.status.observedGeneration === o.generation && last?.status === status;
    }, 15_000).catch(() => {
      throw new Error(`${kind}/${name} not Ready=${status}: ${JSON.stringify(last)}`);
    });
    return last;
  };
  const poll = (id: string, cond: (t: any) => boolean, timeoutMs?: number, key?: string) => pollTask(env, id, cond, timeoutMs, key);
  return Object.assign(env, {
    tools,
    up,
    async agent(name: string, spec: Record<string, unknown> = {}) {
      await env.apply([{ kind: "Agent", name, spec: { instructions: `You are ${name}.`, defaultModel: name, capabilities: ["tools"], toolPolicy: { allow: ["everything_*"] }, maxIterations: 6, ...spec } }]);
    },
    ready,
    poll,
    async stop() {
      await env.svc.stop();
      await tools.close();
      await up.close();
    },
  });
}
