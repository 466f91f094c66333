// Loopback admin runtime views and the Model controller, on a running svc.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { IDLE_MODEL, MODEL, startProtocolSvc, waitFor, type ProtocolSvc } from "./harness";
import { existingPool } from "../../controllers/kinds/model";

let t: ProtocolSvc;

beforeAll(async () => {
  t = await startProtocolSvc();
});
afterAll(async () => {
  await t?.stop();
});

const get = async (p: string) => {
  const res = await fetch(`${t.url}${p}`);
  return { status: res.status, json: (await res.json()) as any };
};

const ready = (kind: string, name: string) => t.svc.store.get(kind, name)?.status.conditions?.find((c) => c.type === "Ready");

describe("admin runtime routes", () => {
  it("cache-stats shows loaded models, leases and prompt reuse", async () => {
    const before = await get("/admin/cache-stats");
    expect(before.status).toBe(200);
    expect(before.json.registered.map((m: any) => m.name).sort()).toEqual([MODEL, IDLE_MODEL].sort());
    const body = { model: MODEL, messages: [{ role: "user", content: "same prefix" }], max_tokens: 3, temperature: 0 };
    for (let i = 0; i < 2; i++) {
      await fetch(`${t.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    }
    const s = (await get("/admin/cache-stats")).json;
    const m = s.models.find((x: any) => x.name === MODEL);
    expect(m.activeLeases).toBe(0);
    expect(m.sequences).toBe(2);
    expect(m.generations).toBeGreaterThanOrEqual(2);
    expect(m.promptTokensEvaluated).toBeGreaterThan(0);
    expect(m.promptTokensReused).toBeGreaterThan(0);
    expect(s.totals.activeLeases).toBe(0);
    expect(s.registered.find((x: any) => x.name === MODEL).loaded).toBe(true);
  });

  it("generation-settings gives each value with its source", async () => {
    const r = await get("/admin/generation-settings");
    expect(r.status).toBe(200);
    expect(r.json.precedence).toEqual(["request", "model", "server", "builtin"]);
    const m = r.json.models.find((x: any) => x.name === MODEL);
    expect(m.sampling.temperature.source).toBe("builtin");
    expect(m.sampling.temperature.value).toBe(r.json.builtinDefaults.temperature);
    expect(m.contextSize).toBe(1024);
    const o = await get(`/admin/generation-settings?model=${MODEL}&temperature=0.3`);
    expect(o.json.models).toHaveLength(1);
    expect(o.json.models[0].sampling.temperature).toEqual({ value: 0.3, source: "request" });
    expect((await get("/admin/generation-settings?model=nope")).status).toBe(404);
    expect((await get("/admin/generation-settings?temperature=hot")).status).toBe(400);
  });

  it("generation-settings reports Model manifest sampling as the model's", async () => {
    await t.svc.store.write([{ op: "upsert", kind: "Model", name: "tuned", owner: "api", spec: { file: "svc-tiny.gguf", threads: 1, sampling: { temperature: 0.2, topK: 5 } } }]);
    await t.manager.idle();
    const m = (await get("/admin/generation-settings?model=tuned")).json.models[0];
    expect(m.sampling.temperature).toEqual({ value: 0.2, source: "model" });
    expect(m.sampling.topK).toEqual({ value: 5, source: "model" });
    expect(m.sampling.topP.source).toBe("builtin");
    await t.svc.store.write([{ op: "delete", kind: "Model", name: "tuned" }]);
    await t.manager.idle();
  });

  it("Server.spec.generation sits between the model's values and the built-in ones, and generation uses it", async () => {
    const chat = async (extra: Record<string, unknown>) => {
      const res = await fetch(`${t.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hello there" }], temperature: 0, ...extra }),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as any;
    };
    const server = t.svc.store.list({ kind: "Server" })[0];
    const name = server?.name ?? "main";
    const base = (server?.spec ?? {}) as Record<string, unknown>;
    await t.svc.store.write([{ op: "upsert", kind: "Model", name: "tuned2", owner: "api", spec: { file: "svc-tiny.gguf", threads: 1, sampling: { topK: 5 } } }]);
    await t.svc.store.write([{ op: "upsert", kind: "Server", name, owner: server?.owner ?? "api", spec: { ...base, generation: { topK: 9, topP: 0.5, maxTokens: 6 } } }]);
    await t.manager.idle();
    try {
      const r = await get("/admin/generation-settings?top_p=0.7");
      expect(r.json.serverSettings).toEqual({ topK: 9, topP: 0.5, maxTokens: 6 });
      const tiny = r.json.models.find((x: any) => x.name === MODEL).sampling;
      expect(tiny.topK).toEqual({ value: 9, source: "server" });
      expect(tiny.maxTokens).toEqual({ value: 6, source: "server" });
      expect(tiny.topP).toEqual({ value: 0.7, source: "request" });
      expect(tiny.minP).toEqual({ value: r.json.builtinDefaults.minP, source: "builtin" });
      const tuned = r.json.models.find((x: any) => x.name === "tuned2").sampling;
      expect(tuned.topK).toEqual({ value: 5, source: "model" }); // the model's value beats the server's
      // a request without max_tokens stops at the server's 6 tokens; its own max_tokens still wins
      const a = await chat({});
      expect(a.usage.completion_tokens).toBe(6);
      expect(a.choices[0].finish_reason).toBe("length");
      const b = await chat({ max_tokens: 3 });
      expect(b.usage.completion_tokens).toBe(3);
    } finally {
      await t.svc.store.write([{ op: "delete", kind: "Model", name: "tuned2" }]);
      await t.svc.store.write(server ? [{ op: "upsert", kind: "Server", name, owner: server.owner, spec: base }] : [{ op: "delete", kind: "Server", name }]);
      await t.manager.idle();
    }
    const after = (await get("/admin/generation-settings")).json;
    expect(after.serverSettings).toEqual({});
    expect(after.models.find((x: any) => x.name === MODEL).sampling.maxTokens.source).toBe("builtin");
  });

  it("runtime-settings shows the server's effective settings and versions", async () => {
    const r = await get("/admin/runtime-settings");
    expect(r.status).toBe(200);
    expect(r.json.exposure).toBe("loopback");
    expect(r.json.listening.port).toBe(t.port);
    expect(r.json.modelsDir).toBe(path.join(t.home, "models"));
    expect(r.json.limits.maxBodyBytes).toBeGreaterThan(0);
    expect(r.json.versions.node).toBe(process.versions.node);
    expect(r.json.versions.nodeLlamaCpp).toMatch(/^\d+\.\d+\.\d+/);
    expect(r.json.threads.models.find((m: any) => m.name === MODEL).threads).toBe(1);
  });
});

describe("Model controller", () => {
  it("registers a model without loading it", async () => {
    const c = ready("Model", IDLE_MODEL);
    expect(c?.status).toBe("True");
    expect(c?.reason).toBe("Registered");
    expect(c?.message).toMatch(/registered/);
  });

  it("reports a missing file with a hint, and an invalid GGUF", async () => {
    await writeFile(path.join(t.svc.modelsDir, "junk.gguf"), "not a model at all");
    await t.svc.store.write([
      { op: "upsert", kind: "Model", name: "missing", owner: "api", spec: { file: "nowhere.gguf" } },
      { op: "upsert", kind: "Model", name: "junk", owner: "api", spec: { file: "junk.gguf" } },
    ]);
    await t.manager.idle();
    const missing = ready("Model", "missing")!;
    expect(missing.status).toBe("False");
    expect(missing.reason).toBe("FileNotFound");
    expect(missing.message).toMatch(/svc models create-tiny/);
    const junk = ready("Model", "junk")!;
    expect(junk.status).toBe("False");
    expect(junk.reason).toBe("InvalidGguf");
    expect(existingPool(t.svc)!.has("missing")).toBe(false);
    // declared but not servable: model unavailable (503), in the protocol's shape
    const res = await fetch(`${t.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "missing", messages: [{ role: "user", content: "x" }] }) });
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error).toMatch(/missing/);
    await t.svc.store.write([{ op: "delete", kind: "Model", name: "missing" }, { op: "delete", kind: "Model", name: "junk" }]);
    await t.manager.idle();
  });

  it("unregisters on delete (weights stay on disk)", async () => {
    await t.svc.store.write([{ op: "upsert", kind: "Model", name: "temp", owner: "api", spec: { file: "svc-tiny.gguf", threads: 1 } }]);
    await t.manager.idle();
    expect(existingPool(t.svc)!.has("temp")).toBe(true);
    await t.svc.store.write([{ op: "delete", kind: "Model", name: "temp" }]);
    await waitFor(async () => t.svc.store.get("Model", "temp") === undefined);
    expect(existingPool(t.svc)!.has("temp")).toBe(false);
    const tags = await get("/api/tags");
    expect(tags.json.models.map((m: any) => m.name)).not.toContain("temp");
    expect(tags.json.models.map((m: any) => m.name)).toContain(MODEL);
  });
});
