// Agent capabilities are enforced in the tool loop, not labels: an Agent with `capabilities: []`
// is offered no MCP tool and a call it makes anyway is refused (the step log says why); `tools`
// unlocks untagged MCP tools; a tool the McpServer tags (tools.<name>.capabilities) needs its tag,
// which `tools` alone does not give. The real server-everything is the tool service.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentEnv, type AgentEnv } from "./env";
import { lastTool } from "./scripted";
import { everythingSpec } from "./mcp-tools";
import { until } from "../helpers/http";

let env: AgentEnv;
const M = ["bare", "tooly", "filer"];

beforeAll(async () => {
  env = await startAgentEnv({ models: M });
  // each agent calls the tool its prompt names, then reports what the tool said
  for (const m of M) env.up.script(m, (b, turn) => (turn === 0 ? { calls: [toolCall(b)] } : { text: `after: ${lastTool(b)}` }));
  // get-sum is tagged `files` on the McpServer; echo stays untagged
  await env.svc.svc.store.write([{ op: "upsert", kind: "McpServer", name: "everything", owner: "config:test", spec: { ...everythingSpec(), tools: { "get-sum": { capabilities: ["files"] } } } }]);
  await until(() => !!env.svc.svc.engines.tools?.get("everything_get-sum")?.capabilities?.includes("files"), 30_000);
  await env.agent("bare", { capabilities: [] });
  await env.agent("tooly", { capabilities: ["tools"] });
  await env.agent("filer", { capabilities: ["files"] });
  for (const m of M) await env.ready("Agent", m);
}, 90_000);
afterAll(async () => {
  await env?.stop();
});

function toolCall(b: any) {
  const prompt = String(b.messages.find((m: any) => m.role === "user")?.content ?? "");
  return prompt.includes("sum") ? { name: "everything_get-sum", args: { a: 2, b: 3 } } : { name: "everything_echo", args: { message: "hi" } };
}

async function dispatch(agent: string, prompt: string) {
  const r = await env.api("POST", `/agents/${agent}/dispatch`, { prompt });
  expect(r.status, JSON.stringify(r.json)).toBe(202);
  const t = await env.poll(r.json.id, (t) => t.status === "completed");
  const result = t.recent_activity.find((s: any) => s.type === "tool_result");
  const offered = (env.up.requests.filter((x) => x.model === agent).at(-1)?.tools ?? []).map((x: any) => x.function.name);
  return { task: t, result, offered };
}

describe("capabilities in the tool loop", () => {
  it("capabilities: [] — no MCP tool is offered, and a call is refused with the reason in the step log", async () => {
    const before = env.tools.calls.get("everything_echo") ?? 0;
    const { task, result, offered } = await dispatch("bare", "echo please");
    expect(offered.filter((n: string) => n.startsWith("everything_"))).toEqual([]);
    expect(result).toMatchObject({ tool: "everything_echo", outcome: "capability_missing", is_error: true });
    expect(result.content).toMatch(/needs the capability "tools", which agent bare does not have \(Agent\.spec\.capabilities\)/);
    expect(task.result.output).toMatch(/after: Error: tool everything_echo needs the capability "tools"/);
    expect(env.tools.calls.get("everything_echo") ?? 0).toBe(before); // the tool never ran
  });

  it("tools — untagged MCP tools are offered and run", async () => {
    const { result, offered } = await dispatch("tooly", "echo please");
    expect(offered).toContain("everything_echo");
    expect(result).toMatchObject({ tool: "everything_echo", outcome: "ok", content: "Echo: hi" });
  });

  it("a tagged tool needs its tag: tools alone is refused; files runs it but not the untagged ones", async () => {
    const t = await dispatch("tooly", "sum please");
    expect(t.offered).not.toContain("everything_get-sum");
    expect(t.result).toMatchObject({ tool: "everything_get-sum", outcome: "capability_missing" });
    expect(t.result.content).toMatch(/needs the capability "files"/);

    const f = await dispatch("filer", "sum please");
    expect(f.offered).toContain("everything_get-sum");
    expect(f.offered).not.toContain("everything_echo");
    expect(f.result).toMatchObject({ tool: "everything_get-sum", outcome: "ok" });
    expect(f.result.content).toMatch(/5/);

    const e = await dispatch("filer", "echo please");
    expect(e.result).toMatchObject({ tool: "everything_echo", outcome: "capability_missing" });
  });

  it("a tag svc does not know is refused at validation", async () => {
    const r = await fetch(`${env.url}/admin/config/plan`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ source: "caps", documents: [{ apiVersion: "svc/v1", kind: "McpServer", metadata: { name: "odd" }, spec: { transport: "stdio", command: "x", capabilities: ["teleport"] } }] }),
    });
    expect(r.status).toBe(422);
    expect(await r.text()).toMatch(/\/spec\/capabilities\/0.*must be one of/);
  });
});
