// GET /v1/audit-logs through a real Koa app on a loopback port, with the parts of the gateway
// the route uses: a real AuditLog on SQLite and a small key table (the full server has its own test).
import Koa from "koa";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import auditRoutes from "../../api/routes/audit";
import type { Gateway } from "../../engines/gateway";
import type { KeyCache, KeyEntry } from "../../engines/gateway/keys";
import type { PolicyIndex } from "../../engines/gateway/policy";
import type { Limits } from "../../engines/gateway/limits";
import type { AlertsSink } from "../../engines/gateway/pipeline-alerts";
import { Gate } from "../../engines/gateway/gate";
import { errorMiddleware } from "../../api/errors";
import { AuditLog } from "../../engines/gateway/audit/log";
import type { ApiKeySpec } from "../../schemas/kinds/api-key";
import type { Svc } from "../../engines/svc";
import { tempDb } from "./helpers";

const key = (id: string, spec: Partial<ApiKeySpec>, role: KeyEntry["role"] = "key"): KeyEntry => ({
  id,
  name: `name of ${id}`,
  owner: "api",
  hash: "0".repeat(64),
  createdAt: new Date(0).toISOString(),
  spec: { key_type: "user", secretHash: `sha256:${"0".repeat(64)}`, ...spec } as ApiKeySpec,
  role,
  ref: { id, name: `name of ${id}` },
  expiresAtMs: Infinity,
  revoked: false,
  ipRanges: null,
  scopeBits: 31,
});
const KEYS: Record<string, KeyEntry> = {
  "tok-admin": key("admin", {}, "admin"),
  "tok-u1": key("key_u1", { organization_id: "org1" }),
  "tok-u2": key("key_u2", { organization_id: "org1" }),
  "tok-u3": key("key_u3", { organization_id: "org2" }),
  "tok-orgview": key("key_org1", { key_type: "organization", organization_id: "org1", permissions: { view_all_usage: true } }),
  "tok-orgnoview": key("key_org1b", { key_type: "organization", organization_id: "org1", permissions: { manage_keys: true } }),
};

describe("GET /v1/audit-logs (route)", () => {
  let db: Awaited<ReturnType<typeof tempDb>>;
  let audit: AuditLog;
  let server: Server;
  let base: string;
  const failed: string[] = [];

  beforeAll(async () => {
    db = await tempDb();
    audit = new AuditLog(db.prisma, db.repos.audit, { log: () => {} });
    const keys = {
      authenticate: (token: string) => (KEYS[token] ? { ok: true, key: KEYS[token] } : { ok: false, code: "invalid_api_key" }),
      get: (id: string) => Object.values(KEYS).find((k) => k.id === id),
    } as unknown as KeyCache;
    const alerts = { failedAuth: (prefix: string) => void failed.push(prefix) } as unknown as AlertsSink;
    // the real gate over these parts: management calls use authentication, key use and audit only
    const gate = new Gate({ keys, policies: {} as PolicyIndex, limits: {} as Limits, audit, alerts, allowUnauthenticatedLoopback: () => false });
    const gateway = { admin: {}, audit, keys, alerts, gate } as unknown as Gateway;
    const log = { info() {}, warn() {}, error() {} };
    const svc = { engines: { gateway }, log } as unknown as Svc;
    const app = new Koa();
    app.use(async (ctx, next) => {
      ctx.state.requestId = "req_route";
      await next();
    });
    app.use(errorMiddleware(log));
    app.use(auditRoutes(svc).routes());
    server = app.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const t0 = Date.UTC(2026, 10, 22, 10);
    const ids = ["key_u1", "key_u2", "key_u3"];
    for (let i = 0; i < 60; i++) {
      const id = ids[i % 3];
      audit.record({
        timestamp: new Date(t0 + i * 60_000),
        apiKeyId: id,
        apiKeyName: `name of ${id}`,
        organizationId: id === "key_u3" ? "org2" : "org1",
        requestId: `req_${i}`,
        action: i % 4 === 0 ? "chat.stream" : "chat.completions",
        model: "tiny",
        provider: "local",
        status: i % 10 === 0 ? "budget_exceeded" : "success",
        latencyMs: 5,
        promptTokens: 3,
        completionTokens: 4,
        costMicros: 20n,
        metadata: { workflow_id: `wf_${i}` },
        ipAddress: "127.0.0.1",
        userAgent: "t",
      });
    }
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await audit.close();
    await db.cleanup();
  });

  const get = async (token: string | null, keyId: string | null, query = "") => {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (keyId !== null) headers["x-api-key-id"] = keyId;
    const res = await fetch(`${base}/v1/audit-logs${query}`, { headers });
    return { status: res.status, body: (await res.json()) as any };
  };
  const chatOnly = (data: any[]) => data.filter((e) => e.action.startsWith("chat."));

  it("a key reads its own log, paginated with an opaque cursor", async () => {
    const seen: string[] = [];
    let cursor = "";
    for (let n = 0; n < 10; n++) {
      const r = await get("tok-u1", "key_u1", `?limit=7&action=chat${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(r.status).toBe(200);
      expect(r.body.object).toBe("list");
      seen.push(...r.body.data.map((e: any) => e.request_id));
      if (!r.body.has_more) break;
      cursor = r.body.next_cursor;
    }
    expect(seen).toHaveLength(20);
    expect(new Set(seen).size).toBe(20);
    const first = (await get("tok-u1", "key_u1", "?limit=1&action=chat")).body.data[0];
    expect(Object.keys(first).sort()).toEqual(
      ["timestamp", "api_key_id", "api_key_name", "request_id", "action", "model", "provider", "status", "latency_ms", "tokens", "cost_usd", "metadata", "ip_address", "user_agent"].sort(),
    );
    expect(first).toMatchObject({ api_key_id: "key_u1", request_id: "req_57", cost_usd: 0.00002, tokens: { prompt: 3, completion: 4, total: 7 } });
  });

  it("filters since, until, action, status", async () => {
    const r = await get("tok-u1", "key_u1", "?since=2026-11-22T10:10:00Z&until=2026-11-22T10:30:00Z&action=chat.completions&limit=1000");
    expect(r.status).toBe(200);
    const ids = r.body.data.map((e: any) => Number(e.request_id.slice(4)));
    expect(ids.every((i: number) => i >= 10 && i <= 30 && i % 3 === 0 && i % 4 !== 0)).toBe(true);
    expect(ids.sort((a: number, b: number) => a - b)).toEqual([15, 18, 21, 27, 30]);
    const bad = await get("tok-u1", "key_u1", "?status=budget_exceeded");
    expect(bad.body.data.map((e: any) => e.request_id).sort()).toEqual(["req_0", "req_30"]);
    expect(bad.body.data[0].error_code).toBe("budget_exceeded");
  });

  it("reading a log is audited under the caller's key", async () => {
    await get("tok-u2", "key_u2");
    const r = await get("tok-u2", "key_u2", "?action=audit_logs");
    expect(r.body.data[0]).toMatchObject({ action: "audit_logs.list", api_key_id: "key_u2", status: "success", metadata: { target_key_id: "key_u2" } });
  });

  it("rights: admin any key or all; org viewer its organization; others only themselves", async () => {
    expect((await get("tok-admin", "key_u3")).status).toBe(200);
    const all = await get("tok-admin", null, "?limit=1000&action=chat");
    expect(all.status).toBe(200);
    expect(all.body.data).toHaveLength(60);

    const org = await get("tok-orgview", null, "?limit=1000&action=chat");
    expect(org.status).toBe(200);
    expect(chatOnly(org.body.data)).toHaveLength(40);
    expect(org.body.data.every((e: any) => e.api_key_id !== "key_u3")).toBe(true);
    expect((await get("tok-orgview", "key_u2")).status).toBe(200);
    const other = await get("tok-orgview", "key_u3");
    expect(other.status).toBe(403);
    expect(other.body.error.code).toBe("permission_denied");

    expect((await get("tok-orgnoview", "key_u1")).status).toBe(403);
    // issue 38: without X-API-Key-ID a key reads its own log (was 400)
    const self = await get("tok-orgnoview", null, "?limit=1000");
    expect(self.status).toBe(200);
    expect(self.body.data.every((e: any) => e.api_key_id === "key_org1b")).toBe(true);
    const denied = await get("tok-u1", "key_u2");
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatchObject({ code: "permission_denied", type: "permission_error" });
    // a key without rights cannot probe which ids exist
    expect((await get("tok-u1", "key_nope")).status).toBe(403);
  });

  it("errors: 401 without or with a bad key, 400 header/params, 404 unknown key", async () => {
    const none = await get(null, "key_u1");
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe("invalid_api_key");
    const bad = await get("sk-svc-wrongwrongwrong", "key_u1");
    expect(bad.status).toBe(401);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((p) => !p.includes("wrongwrongwrong"))).toBe(true); // only a prefix reaches alerts

    const own = await get("tok-u1", null, "?limit=1000&action=chat"); // issue 38: its own log (was 400)
    expect(own.status).toBe(200);
    expect(own.body.data.length).toBeGreaterThan(0);
    expect(own.body.data.every((e: any) => e.api_key_id === "key_u1")).toBe(true);
    expect((await get("tok-u1", "bad id!")).body.error).toMatchObject({ code: "invalid_request", param: "X-API-Key-ID" });
    expect((await get("tok-admin", "key_nope")).status).toBe(404);
    expect((await get("tok-orgview", "key_nope")).status).toBe(404);
    for (const q of ["?limit=0", "?limit=1001", "?limit=abc", "?since=yesterday", "?until=2026-13-45T00:00:00Z", "?cursor=zzz"]) {
      const r = await get("tok-u1", "key_u1", q);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code, q).toBe("invalid_request");
    }
  });
});
