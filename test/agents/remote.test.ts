// Remote (non-loopback) run and dispatch need a key whose permissions.actions allow them.
import os from "node:os";
import path from "node:path";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { everythingTools, type SpiedTools } from "./mcp-tools";
import { scriptedProvider, type ScriptedProvider } from "./scripted";
import { until } from "../helpers/http";

function nonLoopbackAddress(): string | null {
  const all = Object.values(os.networkInterfaces()).flat().filter((a) => a && !a.internal);
  const v4 = all.find((a) => a!.family === "IPv4");
  return v4?.address ?? null;
}

const addr = nonLoopbackAddress();
if (!addr) console.log("skipping the remote agent test: this machine has no non-loopback IPv4 address");

describe.skipIf(!addr)("agents from a non-loopback address", () => {
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
    s = await startTestSvc({ host: addr!, home, resyncMs: 0 });
    base = `http://${addr}:${s.port}`;
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
  });

  it("refuses run and dispatch without a key (401) or with a key lacking agents:run / agents:dispatch (403)", async () => {
    expect((await call("POST", "/agents/far/run", { prompt: "hi" })).status).toBe(401);
    const chatOnly = await key(["chat:completions"]);
    const r = await call("POST", "/agents/far/run", { prompt: "hi" }, chatOnly);
    expect(r.status).toBe(403);
    expect(r.json.error).toMatchObject({ code: "permission_denied" });
    expect(r.json.error.message).toMatch(/agents:run/);
    const d = await call("POST", "/agents/far/dispatch", { prompt: "hi" }, chatOnly);
    expect(d.status).toBe(403);
    expect(d.json.error.message).toMatch(/agents:dispatch/);
  });

  it("runs and dispatches with a key that allows them", async () => {
    const k = await key(["agents:run", "agents:dispatch", "chat:completions", "chat:stream"]);
    const r = await call("POST", "/agents/far/run", { prompt: "hi" }, k);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: "completed", output: "hello from afar" });
    const d = await call("POST", "/agents/far/dispatch", { prompt: "hi" }, k);
    expect(d.status).toBe(202);
  });
});
