// Remote (non-loopback) run and dispatch go through the secure channel (426 in the clear) and need
// a key allowed them: the agents:run / agents:dispatch scope, or for a key without scopes,
// permissions.actions naming them. The remote caller is a network namespace the test makes
// (test/helpers/netns.ts).
import path from "node:path";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openNetns } from "../helpers/netns";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { everythingTools, type SpiedTools } from "./mcp-tools";
import { scriptedProvider, type ScriptedProvider } from "./scripted";
import { until } from "../helpers/http";
import { SecureSession } from "../../cli/pair-client";

const { ns, skip } = await openNetns();

describe.skipIf(!!skip)("agents from a non-loopback address", () => {
  let s: TestSvc;
  let tools: SpiedTools;
  let up: ScriptedProvider;
  let base: string;
  let admin: string;
  const call = async (method: string, p: string, body: unknown, key?: string) => {
    const r = await fetch(base + p, { method, headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: JSON.stringify(body) });
    return { status: r.status, json: (await r.json()) as any };
  };
  const key = async (actions: string[]) => (await call("POST", "/v1/api-keys", { name: "remote", permissions: { actions } }, admin)).json.api_key as string;

  beforeAll(async () => {
    const home = await tempDir("svc-agents-remote-");
    s = await startTestSvc({ host: ns!.hostAddr, home, resyncMs: 0 });
    base = `http://${ns!.hostAddr}:${s.port}`;
    admin = readFileSync(path.join(home, "admin.key"), "utf8").trim();
    tools = await everythingTools(s);
    up = await scriptedProvider();
    up.script("m", () => ({ text: "hello from afar" }));
    await s.svc.store.write([
      { op: "upsert", kind: "Provider", name: "p", owner: "config:test", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 5, models: [{ name: "m" }] } },
      { op: "upsert", kind: "Agent", name: "far", owner: "config:test", spec: { defaultModel: "m", maxIterations: 2 } },
    ]);
    await until(() => s.svc.store.get("Agent", "far")?.status.conditions?.[0]?.status === "True", 10_000);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await tools?.close();
    await up?.close();
    await ns?.close();
  });

  it("refuses plain-HTTP run and dispatch from afar with 426 secure_channel_required, whatever the key", async () => {
    const k = await key(["agents:run", "agents:dispatch", "chat:completions"]);
    for (const p of ["/agents/far/run", "/agents/far/dispatch"]) {
      for (const kk of [undefined, k]) {
        const r = await call("POST", p, { prompt: "hi" }, kk);
        expect(r.status, p).toBe(426);
        expect(r.json.error).toMatchObject({ code: "secure_channel_required" });
      }
    }
  });

  it("through the channel: refuses a key without the allowed actions (403 naming them), runs and dispatches with one", async () => {
    const server = (await (await fetch(base + "/pair/challenge")).json() as any).server.public_key as string;
    const chatOnly = await SecureSession.open(base, server, { apiKey: await key(["chat:completions"]) });
    const r = await chatOnly.call({ method: "POST", path: "/agents/far/run", body: { prompt: "hi" } });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body.toString()).error).toMatchObject({ code: "permission_denied" });
    expect(JSON.parse(r.body.toString()).error.message).toMatch(/agents:run/);
    const d = await chatOnly.call({ method: "POST", path: "/agents/far/dispatch", body: { prompt: "hi" } });
    expect(d.status).toBe(403);
    expect(JSON.parse(d.body.toString()).error.message).toMatch(/agents:dispatch/);
    const ok = await SecureSession.open(base, server, { apiKey: await key(["agents:run", "agents:dispatch", "chat:completions", "chat:stream"]) });
    const run = await ok.call({ method: "POST", path: "/agents/far/run", body: { prompt: "hi" } });
    expect(run.status).toBe(200);
    expect(JSON.parse(run.body.toString())).toMatchObject({ status: "completed", output: "hello from afar" });
    const disp = await ok.call({ method: "POST", path: "/agents/far/dispatch", body: { prompt: "hi" } });
    expect(disp.status).toBe(202);
  });
});
