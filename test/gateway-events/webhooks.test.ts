import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { FAILED_AT, WebhookOutbox } from "../../engines/gateway/outbox/webhooks";
import type { KeyRef, WebhookEventName } from "../../engines/gateway/key-types";
import { clock, receiver, tempDb } from "./helpers";

type Db = Awaited<ReturnType<typeof tempDb>>;
const SECRET = "whsec_test_secret";
const secrets = (ref?: string) => (ref === "env:HOOK_SECRET" ? SECRET : undefined);

function keyWith(url: string, events: WebhookEventName[], enabled = true): KeyRef {
  return { id: "key_a", name: "Key A", webhook: { enabled, url, events, secret: "env:HOOK_SECRET" } };
}

describe("WebhookOutbox", () => {
  let db: Db;
  const closers: Array<() => Promise<unknown>> = [];
  beforeEach(async () => {
    db = await tempDb();
  });
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
    await db.cleanup();
  });

  it("delivers signed JSON that a real receiver verifies", async () => {
    const rx = await receiver();
    closers.push(rx.close);
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {} });
    closers.push(() => outbox.close());
    outbox.emit(keyWith(rx.url, ["key.created"]), "key.created", { note: "hello" });
    expect(await outbox.deliverDue()).toBe(1);

    expect(rx.got).toHaveLength(1);
    const { headers, body } = rx.got[0];
    expect(headers["content-type"]).toBe("application/json");
    const ts = headers["svc-webhook-timestamp"] as string;
    expect(ts).toMatch(/^\d+$/);
    // checked by independent code (the documented scheme: HMAC-SHA256 of "<timestamp>.<raw body>"),
    // not the engine's own verifier
    const mac = (secret: string, t: string, b: string) => "v1=" + createHmac("sha256", secret).update(`${t}.${b}`).digest("hex");
    const sig = headers["svc-webhook-signature"] as string;
    expect(sig).toBe(mac(SECRET, ts, body));
    expect(sig).not.toBe(mac("wrong", ts, body));
    expect(sig).not.toBe(mac(SECRET, ts, body + " "));
    expect(sig).not.toBe(mac(SECRET, String(Number(ts) + 1), body));

    const payload = JSON.parse(body);
    expect(payload).toMatchObject({ type: "key.created", data: { key_id: "key_a", key_name: "Key A", note: "hello" } });
    expect(payload.id).toBe(headers["svc-webhook-id"]);
    expect(new Date(payload.created_at).toISOString()).toBe(payload.created_at);

    const row = await db.prisma.webhookDelivery.findUniqueOrThrow({ where: { id: payload.id } });
    expect(row.deliveredAt).not.toBeNull();
    expect(row.attempts).toBe(1);
    expect(row.payload).not.toContain(SECRET); // the store holds the reference, never the secret
  });

  it("sends only the events the webhook lists, and nothing when disabled", async () => {
    const rx = await receiver();
    closers.push(rx.close);
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {} });
    closers.push(() => outbox.close());
    const key = keyWith(rx.url, ["key.revoked", "key.budget_threshold"]);
    outbox.emit(key, "key.created", {});
    outbox.emit(key, "key.revoked", {});
    outbox.emit(key, "key.limit_exceeded", {});
    outbox.emit(key, "key.budget_threshold", { threshold: 50 });
    outbox.emit(keyWith(rx.url, ["key.revoked"], false), "key.revoked", {});
    outbox.emit({ id: "key_b", name: "B" }, "key.revoked", {});
    expect(await outbox.deliverDue()).toBe(2);
    expect(rx.got.map((r) => JSON.parse(r.body).type).sort()).toEqual(["key.budget_threshold", "key.revoked"]);
    expect(await db.prisma.webhookDelivery.count()).toBe(2);
  });

  it("retries with backoff: failing twice then succeeding is delivered once, attempts=3", async () => {
    const rx = await receiver((n) => (n <= 2 ? 500 : 204));
    closers.push(rx.close);
    const c = clock();
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {}, now: c.now });
    closers.push(() => outbox.close());
    outbox.emit(keyWith(rx.url, ["key.limit_exceeded"]), "key.limit_exceeded", { limit: "per_minute" });

    expect(await outbox.deliverDue()).toBe(0);
    let row = await db.prisma.webhookDelivery.findFirstOrThrow();
    expect(row.attempts).toBe(1);
    expect(row.lastError).toContain("500");
    const wait1 = row.nextAttemptAt.getTime() - c.now().getTime();
    expect(wait1).toBeGreaterThanOrEqual(1000);
    expect(wait1).toBeLessThanOrEqual(1200);

    expect(await outbox.deliverDue()).toBe(0); // not due yet: nothing sent
    expect(rx.got).toHaveLength(1);

    c.advance(1200);
    expect(await outbox.deliverDue()).toBe(0);
    row = await db.prisma.webhookDelivery.findFirstOrThrow();
    expect(row.attempts).toBe(2);
    const wait2 = row.nextAttemptAt.getTime() - c.now().getTime();
    expect(wait2).toBeGreaterThanOrEqual(2000); // doubled
    expect(wait2).toBeLessThanOrEqual(2400);

    c.advance(2400);
    expect(await outbox.deliverDue()).toBe(1);
    row = await db.prisma.webhookDelivery.findFirstOrThrow();
    expect(row.attempts).toBe(3);
    expect(row.deliveredAt).not.toBeNull();
    expect(row.lastError).toBeNull();
    // every attempt carried the same event id, so a receiver can de-duplicate
    expect(new Set(rx.got.map((r) => r.headers["svc-webhook-id"])).size).toBe(1);

    c.advance(3_600_000);
    expect(await outbox.deliverDue()).toBe(0);
    expect(rx.got).toHaveLength(3);
  });

  it("prunes delivered rows after 7 days", async () => {
    const rx = await receiver();
    closers.push(rx.close);
    const c = clock();
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {}, now: c.now });
    closers.push(() => outbox.close());
    outbox.emit(keyWith(rx.url, ["key.created"]), "key.created", {});
    expect(await outbox.deliverDue()).toBe(1);
    c.advance(6 * 86_400_000);
    await outbox.deliverDue();
    expect(await db.prisma.webhookDelivery.count()).toBe(1);
    c.advance(2 * 86_400_000);
    await outbox.deliverDue();
    expect(await db.prisma.webhookDelivery.count()).toBe(0);
  });

  it("gives up after maxAttempts and leaves the row failed", async () => {
    const rx = await receiver(() => 503);
    closers.push(rx.close);
    const c = clock();
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {}, now: c.now, maxAttempts: 3 });
    closers.push(() => outbox.close());
    outbox.emit(keyWith(rx.url, ["key.revoked"]), "key.revoked", {});
    for (let i = 0; i < 5; i++) {
      await outbox.deliverDue();
      c.advance(3_600_000 * 2);
    }
    const row = await db.prisma.webhookDelivery.findFirstOrThrow();
    expect(row.attempts).toBe(3);
    expect(row.deliveredAt).toBeNull();
    expect(row.nextAttemptAt.getTime()).toBe(FAILED_AT.getTime());
    expect(row.lastError).toMatch(/gave up after 3 attempts/);
    expect(rx.got).toHaveLength(3);
  });

  it("pending deliveries survive a restart", async () => {
    const c = clock();
    // The receiver is down: nothing listens on this port.
    const down = await receiver();
    const url = down.url;
    await down.close();
    const first = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {}, now: c.now, pollMs: 60_000 });
    first.start();
    first.emit(keyWith(url, ["key.created"]), "key.created", { n: 1 });
    expect(await first.deliverDue()).toBe(0);
    await first.close();
    const row = await db.prisma.webhookDelivery.findFirstOrThrow();
    expect(row.deliveredAt).toBeNull();
    expect(row.attempts).toBeGreaterThanOrEqual(1);
    expect(row.lastError).toMatch(/request failed/);

    // "Restart": new database connection, new outbox; the receiver is back on the same port.
    await db.close();
    const { openDb } = await import("../../prisma/client");
    const again = await openDb(db.file);
    closers.push(() => again.close());
    const port = Number(new URL(url).port);
    const { createServer } = await import("node:http");
    const bodies: string[] = [];
    const srv = createServer((req, res) => {
      let b = "";
      req.on("data", (d) => (b += d));
      req.on("end", () => {
        bodies.push(b);
        res.end();
      });
    });
    await new Promise<void>((r) => srv.listen(port, "127.0.0.1", r));
    closers.push(() => new Promise((r) => srv.close(r)));
    c.advance(3_600_000);
    const second = new WebhookOutbox(again.prisma, { resolveSecret: secrets, log: () => {}, now: c.now, pollMs: 60_000 });
    closers.push(() => second.close());
    expect(await second.deliverDue()).toBe(1);
    expect(JSON.parse(bodies[0]).data.n).toBe(1);
    expect((await again.prisma.webhookDelivery.findFirstOrThrow()).deliveredAt).not.toBeNull();
  });

  it("reads the table in the background only when a row can be due, and finds another writer's rows within rescanMs", async () => {
    const rx = await receiver((n) => (n === 1 ? 500 : 204));
    closers.push(rx.close);
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    // the outbox's table, counting its reads
    let reads = 0;
    const table = db.prisma.webhookDelivery;
    const counted = new Proxy(table, {
      get: (t, k) => {
        const v = Reflect.get(t, k) as unknown;
        if (typeof v !== "function") return v;
        return k === "findMany" || k === "findFirst" ? (...a: unknown[]) => (reads++, v.apply(t, a)) : v.bind(t);
      },
    });
    const prisma = new Proxy(db.prisma, { get: (t, k) => (k === "webhookDelivery" ? counted : Reflect.get(t, k)) });
    const outbox = new WebhookOutbox(prisma, { resolveSecret: secrets, log: () => {}, pollMs: 20, rescanMs: 60_000 });
    closers.push(() => outbox.close());
    outbox.start();
    await sleep(400);
    expect(reads).toBeLessThanOrEqual(2); // the start's look; twenty beats since, with nothing pending, read nothing
    // this process's event is sent at once; its retry when the backoff (about 1 s) is over
    outbox.emit(keyWith(rx.url, ["key.created"]), "key.created", {});
    for (let i = 0; i < 400 && rx.got.length < 2; i++) await sleep(10);
    expect(rx.got).toHaveLength(2);
    // the row is marked delivered after the receiver's answer; then the pass has a last look
    for (let i = 0; i < 200 && !(await table.findFirstOrThrow()).deliveredAt; i++) await sleep(10);
    expect((await table.findFirstOrThrow()).deliveredAt).not.toBeNull();
    let settled = -1;
    for (let i = 0; i < 20 && settled !== reads; i++) {
      settled = reads;
      await sleep(100);
    }
    await sleep(300);
    expect(reads).toBe(settled); // idle again: fifteen beats, no read

    // another writer's row (an outbox that never runs, as another process or replica): found by
    // the next rescan, though nothing here was told of it
    const scanning = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {}, pollMs: 20, rescanMs: 300 });
    closers.push(() => scanning.close());
    scanning.start();
    await sleep(50);
    const writer = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {} });
    closers.push(() => writer.close());
    writer.emit(keyWith(rx.url, ["key.revoked"]), "key.revoked", {});
    await writer.idle();
    for (let i = 0; i < 200 && rx.got.length < 3; i++) await sleep(10);
    expect(rx.got).toHaveLength(3);
    expect(JSON.parse(rx.got[2].body).type).toBe("key.revoked");
  });

  it("start() delivers rows left by a previous run without an explicit pass", async () => {
    const rx = await receiver();
    closers.push(rx.close);
    const first = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {} });
    first.emit(keyWith(rx.url, ["key.created"]), "key.created", {});
    await first.close(); // never started: the row is only enqueued
    expect(rx.got).toHaveLength(0);
    const second = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {}, pollMs: 20 });
    closers.push(() => second.close());
    second.start();
    for (let i = 0; i < 500 && rx.got.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(rx.got).toHaveLength(1);
  });

  it("never calls a non-HTTPS remote URL and marks the row failed with the reason", async () => {
    const logs: string[] = [];
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: (m) => logs.push(m) });
    closers.push(() => outbox.close());
    outbox.emit(keyWith("http://hooks.example.com/x", ["key.created"]), "key.created", {});
    expect(await outbox.deliverDue()).toBe(0);
    const row = await db.prisma.webhookDelivery.findFirstOrThrow();
    expect(row.attempts).toBe(0);
    expect(row.deliveredAt).toBeNull();
    expect(row.nextAttemptAt.getTime()).toBe(FAILED_AT.getTime());
    expect(row.lastError).toMatch(/must use https/);
    expect(logs.join("\n")).toMatch(/will not be sent/);
    expect(await outbox.deliverDue()).toBe(0); // never due again
  });

  it("an unresolvable secret reference is retried, not sent unsigned", async () => {
    const rx = await receiver();
    closers.push(rx.close);
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: () => undefined, log: () => {} });
    closers.push(() => outbox.close());
    outbox.emit(keyWith(rx.url, ["key.created"]), "key.created", {});
    expect(await outbox.deliverDue()).toBe(0);
    expect(rx.got).toHaveLength(0);
    const row = await db.prisma.webhookDelivery.findFirstOrThrow();
    expect(row.lastError).toMatch(/env:HOOK_SECRET could not be resolved/);
    expect(row.attempts).toBe(1);
  });
});
