// Two replicas on one database (shared mode: both run the e-mail outbox over the same
// EmailDelivery table). A due row must be sent by one of them, not by each: both read the same due
// rows, so without a claim the second replica mailed an alert the first was still sending.
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { smtpSink } from "./smtp-sink";
import { EmailOutbox } from "../../engines/gateway/outbox/email";
import { tempDb } from "../gateway-events/helpers";
import { openDb } from "../../prisma/client";
import type { PrismaClient } from "../../prisma/client";

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

function outbox(prisma: PrismaClient, port: number, logs: string[]) {
  const email = new EmailOutbox(prisma, {
    smtp: () => ({ host: "127.0.0.1", port, tls: "none", from: "alerts@svc.test" }),
    recipientOf: () => "ops@example.test",
    resolveSecret: () => undefined,
    log: (m) => logs.push(m),
    backoffMs: () => 0,
  });
  cleanups.push(() => email.close());
  return email;
}

describe("EmailOutbox across replicas", () => {
  it("an alert e-mail due on two replicas at once is sent once, not once per replica", async () => {
    const db = await tempDb();
    cleanups.push(() => db.cleanup());
    const second = await openDb(path.join(db.dir, "svc.db")); // the other replica's connection
    cleanups.push(() => second.close());
    const logs: string[] = [];
    let replicaB: EmailOutbox | undefined;
    let bDelivered: number | undefined;
    // While the server has replica A's message but has not answered yet, replica B runs its pass
    // (as its 1 s loop would): the row is still pending in the table.
    const sink = await smtpSink({
      hold: (n) =>
        n === 1
          ? replicaB!.deliverDue().then((d) => {
              bDelivered = d;
            })
          : undefined,
    });
    cleanups.push(() => sink.close());
    const replicaA = outbox(db.prisma, sink.port, logs);
    replicaB = outbox(second.prisma, sink.port, logs);

    replicaA.alert({ id: "key_a", name: "Key A" }, "key.budget_threshold", { period: "daily", period_id: "2026-11-22", threshold: 80, percent_used: 81, spend: 8.1, budget: 10, currency: "USD" });
    await replicaA.idle();
    expect(await replicaA.deliverDue()).toBe(1);
    expect(bDelivered).toBe(0); // B left the row to A
    expect(sink.got.map((m) => m.subject)).toEqual(["[svc] Key A: 80% of the daily budget reached"]);
    const [row] = await db.prisma.emailDelivery.findMany();
    expect(row).toMatchObject({ attempts: 1, lastError: null });
    expect(row.deliveredAt).not.toBeNull();
    expect(logs).toEqual([]);
  });

  it("a failed attempt on one replica is counted once: the other does not send the row during it", async () => {
    const db = await tempDb();
    cleanups.push(() => db.cleanup());
    const second = await openDb(path.join(db.dir, "svc.db"));
    cleanups.push(() => second.close());
    const logs: string[] = [];
    let replicaB: EmailOutbox | undefined;
    // A's attempt is refused (451) once B's pass is over
    const sink = await smtpSink({ hold: (n) => (n === 1 ? replicaB!.deliverDue() : undefined), reject: (n) => n === 1 });
    cleanups.push(() => sink.close());
    const replicaA = outbox(db.prisma, sink.port, logs);
    replicaB = outbox(second.prisma, sink.port, logs);

    replicaA.alert({ id: "key_a", name: "Key A" }, "key.limit_exceeded", { limit: "requests_per_minute" });
    await replicaA.idle();
    expect(await replicaA.deliverDue()).toBe(0);
    expect(sink.got).toHaveLength(0); // B did not send it meanwhile
    const [row] = await db.prisma.emailDelivery.findMany();
    expect(row).toMatchObject({ attempts: 1, deliveredAt: null });
    expect(row.lastError).toContain("try again later");
    // the retry (backoff 0 here) is sent once, by whichever replica looks first
    expect(await replicaB.deliverDue()).toBe(1);
    expect(await replicaA.deliverDue()).toBe(0);
    expect(sink.got.map((m) => m.subject)).toEqual(["[svc] Key A: requests_per_minute limit exceeded"]);
  });
});
