// Durable e-mail outbox for alerts, modelled on the webhook outbox: alert() renders the message
// and writes an EmailDelivery row (nothing is only in memory); a delivery loop sends due rows
// over the AlertSettings SMTP server with nodemailer, and a row is marked delivered only once the
// server accepted it. Failures back off exponentially; rows still pending at close() (or while no
// SMTP server is configured) are sent by a later pass or the next start() on the same database.
import { randomUUID } from "node:crypto";
import type { Transporter } from "nodemailer";
import type { PrismaClient } from "../../prisma/client";
import type { EmailDelivery } from "../../prisma/generated/client";
import type { SmtpSettings } from "../../schemas/kinds/alert-settings";
import type { KeyRef, WebhookEventName } from "../gateway/key-types";
import { EMAILED_EVENTS, renderAlertMail } from "./email-render";

/** nextAttemptAt of a row given up on: never due again (kept for inspection). */
export const EMAIL_FAILED_AT = new Date("9999-12-31T00:00:00.000Z");

export interface EmailOutboxOptions {
  /** the AlertSettings smtp block in force, read at every pass */
  smtp: () => SmtpSettings | undefined;
  /** budget_alerts.notify_email of a key, if it has one */
  recipientOf: (keyId: string) => string | undefined;
  resolveSecret: (ref: string) => string | undefined;
  log?: (m: string) => void;
  /** delivery loop interval (default 1000 ms) */
  pollMs?: number;
  /** attempts before a row is left failed (default 12) */
  maxAttempts?: number;
  /** connection, greeting and socket timeout (default 10 s) */
  timeoutMs?: number;
  now?: () => Date;
  /** delay after the n-th failed attempt (default 1 s doubling to 1 h, +0-20% jitter) */
  backoffMs?: (attempt: number) => number;
}

function defaultBackoffMs(attempt: number): number {
  const base = Math.min(3_600_000, 1000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 + Math.random() * 0.2));
}

export class EmailOutbox {
  private readonly log: (m: string) => void;
  private readonly now: () => Date;
  private readonly backoffMs: (attempt: number) => number;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private closed = false;
  private readonly writes = new Set<Promise<unknown>>();
  private passChain: Promise<unknown> = Promise.resolve();
  private queuedPasses = 0;
  private transport: { id: string; t: Transporter } | undefined;
  private warnedUnconfigured = false;
  private lastPrune = 0;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly opts: EmailOutboxOptions,
  ) {
    this.log = opts.log ?? ((m) => console.error(m));
    this.now = opts.now ?? (() => new Date());
    this.backoffMs = opts.backoffMs ?? defaultBackoffMs;
  }

  /** Enqueue an alert e-mail when the event is one that is mailed and the key has notify_email. */
  alert(key: KeyRef, event: WebhookEventName, data: Record<string, unknown>): void {
    if (!EMAILED_EVENTS.has(event)) return;
    const to = this.opts.recipientOf(key.id);
    if (!to) return;
    const now = this.now();
    const mail = renderAlertMail(key, event, data, now);
    const w = this.prisma.emailDelivery
      .create({ data: { id: `mail_${randomUUID().replace(/-/g, "")}`, keyId: key.id, event, recipient: to, subject: mail.subject, body: mail.text, nextAttemptAt: now } })
      .then(
        () => this.kick(),
        (e) => this.log(`email: could not enqueue ${event} for key ${key.id}: ${String(e?.message ?? e)}`),
      )
      .finally(() => this.writes.delete(w));
    this.writes.add(w);
  }

  /** Begin sending, including rows left pending by a previous run. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.timer = setInterval(() => this.kick(), this.opts.pollMs ?? 1000);
    this.timer.unref();
    this.kick();
  }

  /** Stop sending; unsent rows stay pending for the next start. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.writes]);
    await this.passChain.catch(() => undefined);
    this.transport?.t.close();
    this.transport = undefined;
  }

  /** Wait for enqueues in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.writes.size) await Promise.allSettled([...this.writes]);
  }

  /** One pass over due rows; resolves to the number sent. Passes never overlap. */
  deliverDue(): Promise<number> {
    const run = this.passChain.then(() => this.runPass());
    this.passChain = run.catch(() => 0);
    return run;
  }

  private kick(): void {
    if (!this.started || this.closed || this.queuedPasses > 1) return;
    this.queuedPasses++;
    this.deliverDue()
      .catch((e) => this.log(`email: delivery pass failed: ${String(e?.message ?? e)}`))
      .finally(() => this.queuedPasses--);
  }

  private async runPass(): Promise<number> {
    await Promise.allSettled([...this.writes]);
    if (this.closed) return 0;
    await this.prune();
    const smtp = this.opts.smtp();
    const rows = await this.prisma.emailDelivery.findMany({
      where: { deliveredAt: null, nextAttemptAt: { lte: this.now() } },
      orderBy: [{ nextAttemptAt: "asc" }, { createdAt: "asc" }],
      take: 50,
    });
    if (rows.length === 0) return 0;
    if (!smtp) {
      // Not an attempt: the rows wait until AlertSettings names an SMTP server.
      if (!this.warnedUnconfigured) this.log(`email: ${rows.length} alert e-mail(s) waiting: AlertSettings has no smtp server`);
      this.warnedUnconfigured = true;
      return 0;
    }
    this.warnedUnconfigured = false;
    let transport: Transporter;
    try {
      transport = await this.transportFor(smtp);
    } catch (e: any) {
      for (const row of rows) await this.failed(row, String(e?.message ?? e));
      return 0;
    }
    let sent = 0;
    for (const row of rows) {
      if (this.closed) break;
      try {
        await transport.sendMail({ from: smtp.from, to: row.recipient, subject: row.subject, text: row.body, messageId: `<${row.id}@svc>` });
        await this.prisma.emailDelivery.update({ where: { id: row.id }, data: { deliveredAt: this.now(), attempts: { increment: 1 }, lastError: null } });
        sent++;
      } catch (e: any) {
        await this.failed(row, `${e?.code ? `${e.code}: ` : ""}${e?.message ?? e}`);
      }
    }
    return sent;
  }

  /** nodemailer transport for the settings in force; rebuilt when they (or the password) change. */
  private async transportFor(s: SmtpSettings): Promise<Transporter> {
    const password = s.password ? this.opts.resolveSecret(s.password) : undefined;
    if (s.password && !password) throw new Error(`SMTP password ${s.password} could not be resolved`);
    const id = JSON.stringify([s, password]);
    if (this.transport?.id === id) return this.transport.t;
    const nodemailer = (await import("nodemailer")).default; // loaded with the first e-mail, not with svc
    this.transport?.t.close();
    const timeout = this.opts.timeoutMs ?? 10_000;
    const t = nodemailer.createTransport({
      host: s.host,
      port: s.port ?? 587,
      secure: s.tls === "implicit",
      requireTLS: (s.tls ?? "starttls") === "starttls",
      ignoreTLS: s.tls === "none",
      ...(s.username ? { auth: { user: s.username, pass: password ?? "" } } : {}),
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: timeout,
    });
    this.transport = { id, t };
    return t;
  }

  /** Hourly housekeeping: sent rows are kept 7 days, failed ones 30 (for inspection). */
  private async prune(): Promise<void> {
    const now = this.now().getTime();
    if (now - this.lastPrune < 3_600_000) return;
    this.lastPrune = now;
    try {
      await this.prisma.emailDelivery.deleteMany({
        where: {
          OR: [
            { deliveredAt: { lt: new Date(now - 7 * 86_400_000) } },
            { deliveredAt: null, nextAttemptAt: EMAIL_FAILED_AT, createdAt: { lt: new Date(now - 30 * 86_400_000) } },
          ],
        },
      });
    } catch (e: any) {
      this.log(`email: pruning old deliveries failed: ${String(e?.message ?? e)}`);
    }
  }

  private async failed(row: EmailDelivery, error: string): Promise<void> {
    const attempts = row.attempts + 1;
    const max = this.opts.maxAttempts ?? 12;
    const giveUp = attempts >= max;
    await this.prisma.emailDelivery.update({
      where: { id: row.id },
      data: {
        attempts,
        lastError: giveUp ? `gave up after ${attempts} attempts: ${error}` : error,
        nextAttemptAt: giveUp ? EMAIL_FAILED_AT : new Date(this.now().getTime() + this.backoffMs(attempts)),
      },
    });
    if (giveUp) this.log(`email: gave up on ${row.event} ${row.id} for key ${row.keyId}: ${error}`);
  }
}
