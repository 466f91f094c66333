// A tenant cannot aim svc's webhooks at internal services. An organization key with manage_keys
// may name only public https receivers: loopback, private, link-local and unspecified targets
// are refused at creation (and on PATCH); a public name that resolves inside at delivery time
// (rebinding) is never connected to; redirects are never followed. The administrator's keys
// still deliver to loopback receivers. Nothing here leaves this machine: accepted public URLs
// list an event that does not fire in the test, and name resolution is injected.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import net, { type AddressInfo } from "node:net";
import type dns from "node:dns";
import { startEnv, type Env } from "../gateway/fixtures";
import { receiver, tempDb } from "../gateway-events/helpers";
import { until } from "../helpers/http";
import { FAILED_AT, WebhookOutbox } from "../../engines/gateway/outbox/webhooks";
import type { KeyRef } from "../../engines/gateway/key-types";

/** A loopback TCP listener that counts connections (a webhook that reached it would connect). */
async function tcpCounter() {
  let connections = 0;
  const server = net.createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe("webhook URLs named by an organization key", () => {
  let env: Env;
  let org: string;
  let rx: Awaited<ReturnType<typeof receiver>>;
  beforeAll(async () => {
    env = await startEnv();
    rx = await receiver();
    const made = await env.createKey({ name: "acme admin", key_type: "organization", organization_id: "acme", permissions: { manage_keys: true } });
    expect(made.status, JSON.stringify(made.json)).toBe(201);
    org = made.json.api_key;
  });
  afterAll(async () => {
    await env?.stop();
    await rx?.close();
  });

  it("refuses loopback, private, link-local and unspecified receivers at creation", async () => {
    const port = new URL(rx.url).port;
    const internal = [
      `http://127.0.0.1:${port}/hook`,
      `https://127.0.0.1:${port}/hook`,
      `http://localhost:${port}/hook`,
      `https://localhost:${port}/hook`,
      "https://10.0.0.1/hook",
      "https://172.16.5.4/hook",
      "https://192.168.1.1/hook",
      "https://169.254.169.254/latest/meta-data/",
      "https://[::1]/hook",
      "https://[fd00::1]/hook",
      "https://[fe80::1]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://0.0.0.0/hook",
      "https://[::]/hook",
      "https://metadata.internal/hook",
      "https://intranet/hook",
    ];
    for (const url of internal) {
      const r = await env.createKey({ name: "tenant hook", webhook: { url, events: ["key.created"] } }, org);
      expect(r.status, `${url}: ${JSON.stringify(r.json)}`).toBe(400);
      expect(r.json.error.code).toBe("invalid_request");
      expect(r.json.error.param).toBe("webhook.url");
      expect(r.json.error.message).toMatch(/only the administrator may name an internal receiver|must use https/);
    }
    // nothing was created and nothing was sent
    const list = await env.api("GET", "/v1/api-keys", undefined, org);
    expect(list.status).toBe(200);
    expect(list.json.keys.filter((k: any) => k.name === "tenant hook")).toHaveLength(0);
    expect(rx.got).toHaveLength(0);
  });

  it("accepts a public https receiver, but refuses a PATCH that aims it inside", async () => {
    // an event that never fires in this test: nothing is sent off this machine
    const ok = await env.createKey({ name: "public hook", team_id: "ops", webhook: { url: "https://hooks.example.com/svc", events: ["key.budget_threshold"] } }, org);
    expect(ok.status, JSON.stringify(ok.json)).toBe(201);
    const moved = await env.api("PATCH", `/v1/api-keys/${ok.json.id}`, { webhook: { url: `http://127.0.0.1:${new URL(rx.url).port}/x` } }, org);
    expect(moved.status).toBe(400);
    expect(moved.json.error.param).toBe("webhook.url");
    const meta = await env.api("PATCH", `/v1/api-keys/${ok.json.id}`, { webhook: { url: "https://169.254.169.254/latest/meta-data/" } }, org);
    expect(meta.status).toBe(400);
    // its deliveries are public-only, also after the administrator edits the webhook's events
    expect(env.gw.keys.get(ok.json.id)?.ref.webhookPublicOnly).toBe(true);
    const edited = await env.api("PATCH", `/v1/api-keys/${ok.json.id}`, { webhook: { events: ["key.budget_threshold", "key.limit_exceeded"] } });
    expect(edited.status, JSON.stringify(edited.json)).toBe(200);
    await until(() => env.gw.keys.get(ok.json.id)?.ref.webhook?.events?.length === 2);
    expect(env.gw.keys.get(ok.json.id)?.ref.webhookPublicOnly).toBe(true);
    expect(env.svc.svc.store.get("ApiKey", ok.json.id)?.spec.webhook_internal).toBeUndefined();
  });

  it("the administrator's keys still deliver to a loopback receiver; an org key's PATCH of that URL loses the right", async () => {
    const r = await env.createKey({ name: "admin hook", organization_id: "acme", team_id: "ops", webhook: { url: `${rx.url}/admin`, events: ["key.created", "key.revoked"] } });
    expect(r.status, JSON.stringify(r.json)).toBe(201);
    expect(env.gw.keys.get(r.json.id)?.ref.webhookPublicOnly).toBeUndefined();
    await until(() => rx.got.some((g) => JSON.parse(g.body).data.key_id === r.json.id), 15_000);
    expect(JSON.parse(rx.got.find((g) => JSON.parse(g.body).data.key_id === r.json.id)!.body).type).toBe("key.created");
    // the org key may change other fields of that key without touching the URL...
    const renamed = await env.api("PATCH", `/v1/api-keys/${r.json.id}`, { description: "renamed by the tenant" }, org);
    expect(renamed.status, JSON.stringify(renamed.json)).toBe(200);
    // ...but may not name another internal URL for it
    const moved = await env.api("PATCH", `/v1/api-keys/${r.json.id}`, { webhook: { url: `${rx.url}/other` } }, org);
    expect(moved.status).toBe(400);
  });
});

describe("delivery to a public-only receiver", () => {
  const ref = (url: string, publicOnly: boolean): KeyRef => ({ id: "key_t", name: "tenant", webhook: { enabled: true, url, events: ["key.created"] }, ...(publicOnly ? { webhookPublicOnly: true } : {}) });
  /** name resolution under the test's control: every name resolves to 127.0.0.1 */
  const rebound: typeof dns.lookup = ((_host: string, opts: any, cb: any) => {
    const a = [{ address: "127.0.0.1", family: 4 }];
    cb(null, opts?.all ? a : a[0].address, opts?.all ? undefined : 4);
  }) as typeof dns.lookup;

  it("never connects to a name that resolves to loopback at delivery time (rebinding)", async () => {
    const db = await tempDb();
    const target = await tcpCounter();
    const logs: string[] = [];
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: () => undefined, log: (m) => logs.push(m), lookup: rebound });
    try {
      outbox.emit(ref(`https://hooks.rebound.test:${target.port}/x`, true), "key.created", {});
      expect(await outbox.deliverDue()).toBe(0);
      const [row] = await db.prisma.webhookDelivery.findMany();
      expect(row.deliveredAt).toBeNull();
      expect(row.lastError).toMatch(/resolves to 127\.0\.0\.1, which is not a public address/);
      expect(row.nextAttemptAt.getTime()).toBe(FAILED_AT.getTime()); // parked, not retried into it
      expect(target.connections()).toBe(0);
      expect(logs.join("\n")).toMatch(/not sent/);

      // the same receiver named by the administrator (no public-only mark) is connected to:
      // the counter above would have seen a leak
      outbox.emit(ref(`https://127.0.0.1:${target.port}/x`, false), "key.created", {});
      await outbox.deliverDue();
      expect(target.connections()).toBeGreaterThan(0);
    } finally {
      await outbox.close();
      await target.close();
      await db.cleanup();
    }
  });

  it("refuses a loopback literal at delivery even when the row was stored before the rule", async () => {
    const db = await tempDb();
    const target = await tcpCounter();
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: () => undefined, log: () => {}, lookup: rebound });
    try {
      outbox.emit(ref(`https://127.0.0.1:${target.port}/x`, true), "key.created", {});
      expect(await outbox.deliverDue()).toBe(0);
      const [row] = await db.prisma.webhookDelivery.findMany();
      expect(row.lastError).toMatch(/only the administrator may name an internal receiver/);
      expect(target.connections()).toBe(0);
    } finally {
      await outbox.close();
      await target.close();
      await db.cleanup();
    }
  });

  it("does not follow a redirect (to an internal address or anywhere)", async () => {
    const db = await tempDb();
    const inner = await receiver();
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: () => undefined, log: () => {} });
    try {
      // a receiver that answers 307 to another loopback service
      const redirecting = await import("node:http").then(
        (http) =>
          new Promise<{ url: string; close: () => Promise<void> }>((resolve) => {
            const s = http.createServer((_req, res) => {
              res.writeHead(307, { location: `${inner.url}/steal` });
              res.end();
            });
            s.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, close: () => new Promise((r) => s.close(() => r())) }));
          }),
      );
      outbox.emit(ref(`${redirecting.url}/hook`, false), "key.created", {});
      expect(await outbox.deliverDue()).toBe(0);
      const [row] = await db.prisma.webhookDelivery.findMany();
      expect(row.lastError).toMatch(/HTTP 307 \(redirects are not followed\)/);
      expect(inner.got).toHaveLength(0);
      await redirecting.close();
    } finally {
      await outbox.close();
      await inner.close();
      await db.cleanup();
    }
  });
});
