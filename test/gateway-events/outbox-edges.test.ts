// Edge cases of the durable outbox's loop (engines/gateway/outbox/durable-outbox.ts) and the
// alerts' throttles: a wall clock stepped backwards, and a pass whose row update fails.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { WebhookOutbox } from "../../engines/gateway/outbox/webhooks";
import { Alerts } from "../../engines/gateway/alerts/alerts";
import type { KeyRef, WebhookEventName } from "../../engines/gateway/key-types";
import type { AlertSettingsSpec } from "../../schemas/kinds/alert-settings";
import { clock, receiver, tempDb } from "./helpers";

type Db = Awaited<ReturnType<typeof tempDb>>;
const secrets = () => "whsec_review";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(cond: () => boolean | Promise<boolean>, ms = 15_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(20)) if (await cond()) return true;
  return cond();
}

function keyWith(url: string, events: WebhookEventName[]): KeyRef {
  return { id: "key_a", name: "Key A", webhook: { enabled: true, url, events, secret: "env:HOOK_SECRET" } };
}

/** db.prisma with its webhookDelivery table wrapped (calls counted, some made to fail). */
function wrapTable(db: Db, hooks: { findFirst?: () => void; update?: (args: any) => void }) {
  const table = db.prisma.webhookDelivery;
  const wrapped = new Proxy(table, {
    get: (t, k) => {
      const v = Reflect.get(t, k) as unknown;
      if (typeof v !== "function") return v;
      const hook = (hooks as Record<string, ((a: any) => void) | undefined>)[k as string];
      return hook ? (a: any) => (hook(a), v.call(t, a)) : v.bind(t);
    },
  });
  return new Proxy(db.prisma, { get: (t, k) => (k === "webhookDelivery" ? wrapped : Reflect.get(t, k)) });
}

describe("durable outbox: clock steps and failed updates", () => {
  let db: Db;
  const closers: Array<() => Promise<unknown>> = [];
  beforeEach(async () => {
    db = await tempDb();
  });
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
    await db.cleanup();
  });

  it("a wall clock stepped backwards does not stop the rescan for rows another replica wrote", async () => {
    const rx = await receiver();
    closers.push(rx.close);
    // the machine's clock, which NTP (or an operator) steps back by an hour while svc runs
    let offset = 0;
    const now = () => new Date(Date.now() + offset);
    let looks = 0;
    const prisma = wrapTable(db, { findFirst: () => looks++ });
    const scanning = new WebhookOutbox(prisma, { resolveSecret: secrets, log: () => {}, now, pollMs: 20, rescanMs: 200 });
    closers.push(() => scanning.close());
    scanning.start();
    expect(await waitFor(() => looks >= 1)).toBe(true); // the start's pass has looked: nothing pending
    offset = -3_600_000;
    // another replica (same clock) writes a row, due now; nothing tells this process of it
    const writer = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {}, now });
    closers.push(() => writer.close());
    writer.emit(keyWith(rx.url, ["key.revoked"]), "key.revoked", {});
    await writer.idle();
    // documented: found by the next rescan (every rescanMs), not an hour later
    expect(await waitFor(() => rx.got.length >= 1)).toBe(true);
    expect(JSON.parse(rx.got[0].body).type).toBe("key.revoked");
  });

  it("hourly pruning goes on after the wall clock was stepped backwards", async () => {
    const rx = await receiver();
    closers.push(rx.close);
    const c = clock("2027-11-22T10:00:00.000Z"); // booted with a clock a year ahead...
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {}, now: c.now });
    closers.push(() => outbox.close());
    await outbox.deliverDue(); // housekeeping ran at the wrong time
    c.set("2026-11-22T10:00:00.000Z"); // ...then set right
    outbox.emit(keyWith(rx.url, ["key.created"]), "key.created", {});
    expect(await outbox.deliverDue()).toBe(1);
    c.advance(8 * 86_400_000);
    await outbox.deliverDue();
    // documented: delivered rows are kept 7 days (not until the clock reaches 2027 again)
    expect(await db.prisma.webhookDelivery.count()).toBe(0);
  });

  it("a row update that fails ends the pass only once its sends are over: the next pass sends no row twice", async () => {
    // the first request is answered at once, every other one after a while
    const got: string[] = [];
    const srv = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        got.push(req.headers["svc-webhook-id"] as string);
        setTimeout(() => res.end("ok"), got.length === 1 ? 0 : 2_000);
      });
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    closers.push(() => new Promise((r) => srv.close(r)));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`;
    // the store refuses the first write of a pass's result (a locked SQLite file, a dropped
    // PostgreSQL connection): the row stays pending, as at-least-once allows
    let failedId: string | undefined;
    const prisma = wrapTable(db, {
      update: (a) => {
        if (failedId === undefined) {
          failedId = a.where.id;
          throw new Error("database is locked");
        }
      },
    });
    const outbox = new WebhookOutbox(prisma, { resolveSecret: secrets, log: () => {} });
    closers.push(() => outbox.close());
    for (let i = 0; i < 4; i++) outbox.emit(keyWith(url, ["key.created"]), "key.created", { i });
    await expect(outbox.deliverDue()).rejects.toThrow(/database is locked/);
    // the next pass (the loop's next beat); "passes never overlap"
    await outbox.deliverDue();
    expect(await waitFor(async () => (await db.prisma.webhookDelivery.count({ where: { deliveredAt: null } })) === 0)).toBe(true);
    await outbox.close();
    expect(new Set(got).size).toBe(4);
    // only the row whose result could not be written may go out again
    const twice = [...new Set(got.filter((id, i) => got.indexOf(id) !== i))];
    expect(twice.filter((id) => id !== failedId)).toEqual([]);
  });
});

describe("alerts: a clock stepped back", () => {
  let db: Db;
  beforeEach(async () => {
    db = await tempDb();
  });
  afterEach(async () => {
    await db.cleanup();
  });

  it("limit_exceeded is not silenced after the wall clock was stepped backwards", async () => {
    const rx = await receiver();
    const c = clock("2026-11-22T12:00:00.000Z");
    const outbox = new WebhookOutbox(db.prisma, { resolveSecret: secrets, log: () => {}, now: c.now });
    const settings: AlertSettingsSpec = { budget_threshold: [50, 80, 100], rate_limit_percentage: 90, failed_auth_threshold: 5, unusual_patterns: false };
    const alerts = new Alerts({ outbox, prisma: db.prisma, settings: () => settings, now: c.now, log: () => {} });
    try {
      const key = keyWith(rx.url, ["key.limit_exceeded"]);
      alerts.limitExceeded(key, "requests_per_minute", {});
      await alerts.idle();
      expect(await outbox.deliverDue()).toBe(1);
      c.set("2026-11-22T10:00:00.000Z"); // the clock is stepped back two hours
      c.advance(61_000); // a minute and more later, the limit refuses again
      alerts.limitExceeded(key, "requests_per_minute", {});
      await alerts.idle();
      expect(await outbox.deliverDue()).toBe(1);
      // documented: at most once a minute per key and limit, so both minutes are reported
      expect(rx.got).toHaveLength(2);
    } finally {
      await outbox.close();
      await rx.close();
    }
  });
});
