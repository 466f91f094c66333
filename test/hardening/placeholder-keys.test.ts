// Placeholder keys on loopback: the official OpenAI and Anthropic SDKs must send some key, and
// users give them what Ollama / LM Studio / llama-server accept ("none", "ollama", "lm-studio").
// On unauthenticated loopback such a value is anonymous; a value shaped like an svc key
// (sk-svc-…) is always checked, and the admin / master keys (any string) stay themselves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";
import { MODEL, startProtocolSvc, type ProtocolSvc } from "../protocols/harness";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";

// not sk-svc- shaped: the rule must still recognise them as themselves
const ADMIN = "local-admin-passphrase-1234";
const MASTER = "local-master-passphrase-5678";
const saved = { admin: process.env.SVC_ADMIN_KEY, master: process.env.SVC_MASTER_KEY };
const restore = () => {
  for (const [k, v] of [["SVC_ADMIN_KEY", saved.admin], ["SVC_MASTER_KEY", saved.master]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
};

let t: ProtocolSvc;

beforeAll(async () => {
  process.env.SVC_ADMIN_KEY = ADMIN;
  process.env.SVC_MASTER_KEY = MASTER;
  try {
    t = await startProtocolSvc();
  } finally {
    restore();
  }
});
afterAll(async () => {
  await t?.stop();
});

const api = (p: string, init: RequestInit & { key?: string } = {}) =>
  fetch(t.url + p, { ...init, headers: { "content-type": "application/json", ...(init.key ? { authorization: `Bearer ${init.key}` } : {}), ...(init.headers ?? {}) } });

describe("unauthenticated loopback (the default)", () => {
  it("the official OpenAI SDK with apiKey 'none' is served anonymously", async () => {
    const client = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: "none", maxRetries: 0 });
    const out = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hello" }], max_tokens: 4, temperature: 0 });
    expect(out.choices[0].message.role).toBe("assistant");
    const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hello" }], max_tokens: 4, stream: true });
    let chunks = 0;
    for await (const _ of stream) chunks++;
    expect(chunks).toBeGreaterThan(0);
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain(MODEL);
  });

  it("the official Anthropic SDK with apiKey 'none' is served anonymously", async () => {
    const client = new Anthropic({ baseURL: t.url, apiKey: "none", maxRetries: 0 });
    const m = await client.messages.create({ model: MODEL, max_tokens: 4, messages: [{ role: "user", content: "hello" }] });
    expect(m.type).toBe("message");
  });

  it("'ollama' and 'lm-studio' placeholders work on the Ollama and OpenAI routes", async () => {
    for (const key of ["ollama", "lm-studio"]) {
      const r = await api("/api/chat", { method: "POST", key, body: JSON.stringify({ model: MODEL, stream: false, messages: [{ role: "user", content: "hi" }], options: { num_predict: 2 } }) });
      expect(r.status, key).toBe(200);
    }
  });

  it("an sk-svc- key is always checked: unknown or revoked stays 401 on loopback", async () => {
    const client = (apiKey: string) => new OpenAI({ baseURL: `${t.url}/v1`, apiKey, maxRetries: 0 });
    const call = (apiKey: string) => client(apiKey).chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }], max_tokens: 2 });
    await expect(call("sk-svc-not-a-real-key")).rejects.toMatchObject({ status: 401, code: "invalid_api_key" });

    const made = await api("/v1/api-keys", { method: "POST", key: ADMIN, body: JSON.stringify({ name: "soon revoked" }) });
    expect(made.status).toBe(201);
    const k = (await made.json()) as any;
    expect((await call(k.api_key)).choices.length).toBe(1);
    expect((await api(`/v1/api-keys/${k.id}`, { method: "DELETE", key: ADMIN })).status).toBe(200);
    await expect(call(k.api_key)).rejects.toMatchObject({ status: 401, code: "key_revoked" });
  });

  it("the admin and master keys (any string) are recognised as themselves, not as placeholders", async () => {
    // the admin key manages keys; a placeholder does not
    expect((await api("/v1/api-keys", { key: ADMIN })).status).toBe(200);
    expect((await api("/v1/api-keys", { key: "none" })).status).toBe(401);
    // the master key is refused for inference (it is the master key, not anonymous)
    const r = await api("/v1/chat/completions", { method: "POST", key: MASTER, body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "x" }], max_tokens: 2 }) });
    expect(r.status).toBe(403);
    expect(((await r.json()) as any).error.code).toBe("permission_denied");
  });
});

describe("loopback with allowUnauthenticatedLoopback: false", () => {
  let s: TestSvc;
  beforeAll(async () => {
    const home = await tempDir("svc-placeholder-");
    const manifest = path.join(home, "server.yaml");
    await writeFile(manifest, "apiVersion: svc/v1\nkind: Server\nmetadata:\n  name: server\nspec:\n  allowUnauthenticatedLoopback: false\n");
    s = await startTestSvc({ home, config: [manifest] });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("refuses a placeholder key (and no key) with 401", async () => {
    expect(s.svc.server.allowUnauthenticatedLoopback).toBe(false);
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "none", maxRetries: 0 });
    await expect(client.chat.completions.create({ model: "anything", messages: [{ role: "user", content: "x" }] })).rejects.toMatchObject({ status: 401, code: "invalid_api_key" });
    const anth = new Anthropic({ baseURL: s.url, apiKey: "none", maxRetries: 0 });
    await expect(anth.messages.create({ model: "anything", max_tokens: 2, messages: [{ role: "user", content: "x" }] })).rejects.toMatchObject({ status: 401 });
    const none = await fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(none.status).toBe(401);
  });
});
