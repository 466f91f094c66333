// The local GGUF path end to end: an Agent on the generated tiny model, a forced first tool call
// (grammar-constrained by the local engine) executed by the real server-everything, its result
// fed back for the next (auto) turn.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { ensureTinyModel } from "../../engines/inference";
import { startAgentEnv, type AgentEnv } from "./env";
import { parseSse } from "./scripted";

let env: AgentEnv;
beforeAll(async () => {
  env = await startAgentEnv();
  await ensureTinyModel(env.svc.svc.modelsDir);
  await env.apply([{ kind: "Model", name: "tiny", spec: { file: "svc-tiny.gguf", threads: 1, contextSize: 2048, parallel: 1, idleUnloadSeconds: 0 } }]);
  await env.ready("Model", "tiny");
  await env.agent("local", { defaultModel: "tiny", toolPolicy: { allow: ["everything_get-sum"] }, maxIterations: 2, maxOutputTokens: 200 });
  await env.ready("Agent", "local");
}, 120_000);
afterAll(async () => {
  await env?.stop();
});

describe("agent on a local GGUF model", () => {
  it("a forced tool call runs the real MCP tool and the loop continues", async () => {
    const res = await fetch(`${env.url}/agents/local/run`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "add 2 and 3", stream: true, tool_choice: { type: "function", function: { name: "everything_get-sum" } } }),
    });
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    const call = events.find((e) => e.event === "tool_call")!.data;
    expect(call.name).toBe("everything_get-sum");
    const args = JSON.parse(call.arguments); // grammar-constrained: valid JSON of the tool's schema
    expect(typeof args.a).toBe("number");
    expect(typeof args.b).toBe("number");
    const result = events.find((e) => e.event === "tool_result")!.data;
    expect(result).toMatchObject({ name: "everything_get-sum", outcome: "ok", is_error: false });
    expect(result.content).toContain(String(args.a + args.b));
    const done = events.at(-1)!;
    expect(done.event).toBe("done");
    expect(done.data.iterations).toBe(2); // the tool's result went back to the model for a second turn
    expect(["completed", "incomplete"]).toContain(done.data.status);
    expect(env.tools.calls.get("everything_get-sum")).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
