// End to end: the real server (api/server.ts) with the gateway engine, a loopback stand-in
// OpenAI upstream, a key made over HTTP, chat requests, then GET /v1/audit-logs; a stop (the
// SIGTERM path) and a restart on the same data dir still show every entry.
import { writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const ADMIN = "sk-svc-e2eAdminKeyForAuditTests0000000000";

describe("GET /v1/audit-logs end to end", () => {
  let upstream: Server;
  let home: string;
  let manifest: string;
  let svc: Awaited<ReturnType<typeof import("../helpers/svc").startTestSvc>> | undefined;
  let secret = "";
  let keyId = "";
  const prevAdmin = process.env.SVC_ADMIN_KEY;

  const start = async () => {
    const { startTestSvc } = await import("../helpers/svc");
    svc = await startTestSvc({ home, config: [manifest] });
  };
  const call = async (method: string, p: string, token: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${svc!.url}${p}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  beforeAll(async () => {
    process.env.SVC_ADMIN_KEY = ADMIN;
    upstream = createServer((req, res) => {
      let b = "";
      req.on("data", (d) => (b += d));
      req.on("end", () => {
        const model = JSON.parse(b || "{}").model ?? "m";
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            id: "chatcmpl-1",
            object: "chat.completion",
            created: 1,
            model,
            choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
            usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
          }),
        );
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    const port = (upstream.address() as AddressInfo).port;
    const { tempDir } = await import("../helpers/svc");
    home = await tempDir("audit-e2e-");
    manifest = path.join(home, "provider.yaml");
    await writeFile(
      manifest,
      [
        "apiVersion: svc/v1",
        "kind: Provider",
        "metadata: {name: standin}",
        "spec:",
        "  type: openai",
        `  baseUrl: http://127.0.0.1:${port}/v1`,
        "  models:",
        "    - {name: gpt-standin, inputPerMillion: 1, outputPerMillion: 2}",
        "",
      ].join("\n"),
    );
    await start();
    const made = await call("POST", "/v1/api-keys", ADMIN, { name: "audit e2e", permissions: { models: ["gpt-standin"] } });
    expect(made.status).toBe(201);
    secret = made.body.api_key;
    keyId = made.body.id;
    expect(secret).toMatch(/^sk-svc-/);
    expect(keyId).toBeTruthy();
  }, 60_000);

  afterAll(async () => {
    await svc?.stop();
    await new Promise((r) => upstream?.close(r));
    if (prevAdmin === undefined) delete process.env.SVC_ADMIN_KEY;
    else process.env.SVC_ADMIN_KEY = prevAdmin;
  });

  it("records every chat request with the spec's fields and serves them back", async () => {
    for (let i = 0; i < 5; i++) {
      const r = await call("POST", "/v1/chat/completions", secret, {
        model: "gpt-standin",
        messages: [{ role: "user", content: `hello ${i}` }],
        metadata: { workflow_id: "wf-e2e", user_id: `u${i}` },
      });
      expect(r.status).toBe(200);
    }
    const denied = await call("POST", "/v1/chat/completions", secret, { model: "not-allowed", messages: [{ role: "user", content: "x" }] });
    expect(denied.status).toBe(404);
    expect(denied.body.error.code).toBe("model_not_found");

    const page = await call("GET", "/v1/audit-logs?action=chat&limit=100", secret, undefined, { "x-api-key-id": keyId });
    expect(page.status).toBe(200);
    expect(page.body.object).toBe("list");
    const ok = page.body.data.filter((e: any) => e.status === "success");
    expect(ok).toHaveLength(5);
    expect(ok[0]).toMatchObject({
      api_key_id: keyId,
      api_key_name: "audit e2e",
      model: "gpt-standin",
      provider: "standin",
      tokens: { prompt: 11, completion: 7, total: 18 },
      metadata: { workflow_id: "wf-e2e" },
    });
    expect(ok[0].cost_usd).toBeCloseTo((11 * 1 + 7 * 2) / 1e6, 9);
    expect(page.body.data.some((e: any) => e.status !== "success" && e.error_code)).toBe(true);

    // cursor pagination over the same entries
    const seen: string[] = [];
    let cursor = "";
    for (let n = 0; n < 10; n++) {
      const r = await call("GET", `/v1/audit-logs?action=chat&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, secret, undefined, { "x-api-key-id": keyId });
      seen.push(...r.body.data.map((e: any) => e.request_id));
      if (!r.body.has_more) break;
      cursor = r.body.next_cursor;
    }
    expect(new Set(seen).size).toBe(page.body.data.length);

    // the admin key reads it too; the key cannot read another key's log
    expect((await call("GET", "/v1/audit-logs", ADMIN, undefined, { "x-api-key-id": keyId })).status).toBe(200);
    expect((await call("GET", "/v1/audit-logs", secret, undefined, { "x-api-key-id": "admin" })).status).toBe(403);
    // issue 38: without X-API-Key-ID a key reads its own log (was 400)
    const mine = await call("GET", "/v1/audit-logs?limit=1000", secret);
    expect(mine.status).toBe(200);
    expect(mine.body.data.length).toBeGreaterThan(0);
    expect(mine.body.data.every((e: any) => e.api_key_id === keyId)).toBe(true);
  });

  it("webhooks: a key's listed events reach a loopback receiver, signed", async () => {
    const { receiver } = await import("./helpers");
    // verified by independent code: the README's examples/webhooks/verify.mjs, not the engine's
    const { verifySvcWebhook } = (await import(pathToFileURL(path.join(root, "examples/webhooks/verify.mjs")).href)) as {
      verifySvcWebhook: (secret: string, headers: Record<string, unknown>, body: string) => boolean;
    };
    const { until } = await import("../helpers/http");
    const rx = await receiver();
    try {
      const made = await call("POST", "/v1/api-keys", ADMIN, {
        name: "hooked",
        permissions: { models: ["gpt-standin"] },
        rate_limits: { per_minute: 1 },
        webhook: { enabled: true, url: rx.url, events: ["key.limit_exceeded", "key.revoked"], secret: "whsec_e2e_secret" },
      });
      expect(made.status).toBe(201);
      const id = made.body.id;
      const chat = () => call("POST", "/v1/chat/completions", made.body.api_key, { model: "gpt-standin", messages: [{ role: "user", content: "x" }] });
      expect((await chat()).status).toBe(200);
      expect((await chat()).status).toBe(429);
      const revoked = await call("DELETE", `/v1/api-keys/${id}`, ADMIN);
      expect(revoked.status).toBe(200);
      expect(revoked.body.status).toBe("revoked");
      await until(() => rx.got.length >= 2);
      const types = rx.got.map((r) => JSON.parse(r.body).type).sort();
      expect(types).toEqual(["key.limit_exceeded", "key.revoked"]); // key.created is not listed: not sent
      for (const r of rx.got) {
        expect(verifySvcWebhook("whsec_e2e_secret", r.headers, r.body)).toBe(true);
        expect(verifySvcWebhook("whsec_wrong", r.headers, r.body)).toBe(false);
        expect(JSON.parse(r.body).data.key_id).toBe(id);
      }
    } finally {
      await rx.close();
    }
  });

  it("entries recorded right before stop() are all there after a restart", async () => {
    const sent = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call("POST", "/v1/chat/completions", secret, { model: "gpt-standin", messages: [{ role: "user", content: `burst ${i}` }] }),
      ),
    );
    expect(sent.map((r) => r.status)).toEqual(Array(40).fill(200));
    await svc!.stop(); // the SIGTERM path
    svc = undefined;
    await start();
    const r = await call("GET", "/v1/audit-logs?action=chat&limit=1000", ADMIN, undefined, { "x-api-key-id": keyId });
    expect(r.status).toBe(200);
    // the five of the first test, its one refused request, and the forty
    expect(r.body.data.filter((e: any) => e.status === "success")).toHaveLength(5 + 40);
    expect(r.body.data).toHaveLength(6 + 40);
  }, 60_000);
});
