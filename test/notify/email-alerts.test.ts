// Alert e-mails to budget_alerts.notify_email over a loopback SMTP server: rendered when the alert
// fires, kept in the durable outbox while the SMTP server is down (across a restart of svc), and
// sent once it is up; retried with backoff after a temporary refusal.
import { afterEach, describe, expect, it } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";
import { tempDir } from "../helpers/svc";
import { until } from "../helpers/http";
import { smtpSink, type SmtpSink } from "./smtp-sink";
import { Alerts } from "../../engines/gateway/alerts/alerts";
import { WebhookOutbox } from "../../engines/gateway/outbox/webhooks";
import { EmailOutbox } from "../../engines/gateway/outbox/email";
import { tempDb } from "../gateway-events/helpers";
import type { AlertSettingsSpec } from "../../schemas/kinds/alert-settings";

const msg = [{ role: "user" as const, content: "hi" }];
/** poll an async condition (a database read) */
async function eventually(cond: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

describe("budget_alerts.notify_email", () => {
  it("a budget threshold e-mail raised while SMTP is down waits in the outbox across a restart and is delivered after it", async () => {
    process.env.SVC_TEST_SMTP_PASSWORD = "smtp-pass-1";
    // a free loopback port with nothing listening on it: the SMTP server is down
    const probe = await smtpSink();
    const port = probe.port;
    await probe.close();

    const up: StandIn = await standIn();
    cleanups.push(() => up.close());
    const home = await tempDir("svc-mail-");
    let env: Env = await startEnv({ home });
    cleanups.push(() => env.stop());
    // $0.10 a token: one request (10 prompt + 5 completion tokens upstream) costs $1.50
    await env.apply([
      provider("pricey", up, [{ name: "gpt-pricey", inputPerMillion: 100_000, outputPerMillion: 100_000 }]),
      {
        kind: "AlertSettings",
        name: "default",
        spec: { smtp: { host: "127.0.0.1", port, tls: "none", from: "svc alerts <alerts@svc.test>", username: "svc", password: "env:SVC_TEST_SMTP_PASSWORD" } },
      },
    ]);
    const k = await env.createKey({ name: "mailed-key", budget_limits: { daily: 10 }, budget_alerts: { thresholds: [10], notify_email: "ops@example.test" } });
    expect(k.status).toBe(201);
    await env.client(k.json.api_key).chat.completions.create({ model: "gpt-pricey", messages: msg, max_tokens: 5 }); // $1.50 of $10: 15%

    const rows = () => env.svc.svc.db.prisma.emailDelivery.findMany();
    await eventually(async () => (await rows()).some((r) => r.attempts >= 1));
    const [queued] = await rows();
    expect(queued).toMatchObject({ keyId: k.json.id, event: "key.budget_threshold", recipient: "ops@example.test", deliveredAt: null });
    expect(queued.lastError).toMatch(/ECONNREFUSED/);
    await env.stop();

    const sink = await smtpSink({ port, users: { svc: "smtp-pass-1" } });
    cleanups.push(() => sink.close());
    env = await startEnv({ home });
    await until(() => sink.got.length > 0, 20_000);
    const [mail] = sink.got;
    expect(mail.rcptTo).toEqual(["ops@example.test"]);
    expect(mail.mailFrom).toBe("alerts@svc.test");
    expect(mail.user).toBe("svc"); // logged in with the password read from env:SVC_TEST_SMTP_PASSWORD
    expect(mail.to).toBe("ops@example.test");
    expect(mail.subject).toBe("[svc] mailed-key: 10% of the daily budget reached");
    expect(mail.text).toContain(`API key "mailed-key" (${k.json.id}) has used 15% of its daily budget (threshold 10%): $1.50 of $10.00`);
    expect(mail.text).toContain("threshold: 10");
    await eventually(async () => (await rows())[0]?.deliveredAt !== null);
    expect(sink.got).toHaveLength(1);
  });
});

describe("EmailOutbox with Alerts", () => {
  const settings: AlertSettingsSpec = { budget_threshold: [50], rate_limit_percentage: 90, failed_auth_threshold: 2, unusual_patterns: false };

  async function setup(sink: SmtpSink, recipients: Record<string, string>) {
    const db = await tempDb();
    cleanups.push(() => db.cleanup());
    const webhooks = new WebhookOutbox(db.prisma, { resolveSecret: () => undefined, log: () => {} });
    cleanups.push(() => webhooks.close());
    const email = new EmailOutbox(db.prisma, {
      smtp: () => ({ host: "127.0.0.1", port: sink.port, tls: "none", from: "alerts@svc.test" }),
      recipientOf: (id) => recipients[id],
      resolveSecret: () => undefined,
      log: () => {},
      backoffMs: () => 0,
    });
    cleanups.push(() => email.close());
    const alerts = new Alerts({ outbox: webhooks, email, prisma: db.prisma, settings: () => settings, log: () => {} });
    return { db, email, alerts };
  }

  it("limit exceeded and suspicious activity alerts are e-mailed to the key's notify_email; a key without one gets none", async () => {
    const sink = await smtpSink();
    cleanups.push(() => sink.close());
    const { email, alerts } = await setup(sink, { key_a: "a@example.test" });
    alerts.limitExceeded({ id: "key_a", name: "Key A" }, "requests_per_minute", { limit_value: 10 });
    alerts.limitExceeded({ id: "key_b", name: "Key B" }, "requests_per_minute", { limit_value: 10 });
    alerts.failedAuth("sk-svc-abc", "127.0.0.9", { id: "key_a", name: "Key A" });
    alerts.failedAuth("sk-svc-abc", "127.0.0.9", { id: "key_a", name: "Key A" }); // 2 = failed_auth_threshold
    await alerts.idle();
    await email.idle();
    expect(await email.deliverDue()).toBe(2);
    expect(sink.got.map((m) => [m.rcptTo.join(","), m.subject])).toEqual([
      ["a@example.test", "[svc] Key A: requests_per_minute limit exceeded"],
      ["a@example.test", "[svc] Key A: suspicious activity (failed_auth)"],
    ]);
    expect(sink.got[0].text).toContain("limit_value: 10");
    expect(sink.got[1].text).toContain("ip_address: 127.0.0.9");
  });

  it("a temporary SMTP refusal is retried with backoff until the server accepts", async () => {
    const sink = await smtpSink({ reject: (n) => n === 1 });
    cleanups.push(() => sink.close());
    const { db, email, alerts } = await setup(sink, { key_a: "a@example.test" });
    alerts.spendChanged({ id: "key_a", name: "Key A" }, { dailyMicros: 6_000_000n, monthlyMicros: 0n, totalMicros: 0n }, { daily: 10 }, [50]);
    await alerts.idle();
    await email.idle();
    expect(await email.deliverDue()).toBe(0); // 451 from the server
    const [row] = await db.prisma.emailDelivery.findMany();
    expect(row).toMatchObject({ attempts: 1, deliveredAt: null });
    expect(row.lastError).toContain("try again later");
    expect(await email.deliverDue()).toBe(1);
    expect(sink.got.map((m) => m.subject)).toEqual(["[svc] Key A: 50% of the daily budget reached"]);
    expect((await db.prisma.emailDelivery.findMany())[0]).toMatchObject({ attempts: 2 });
  });
});
