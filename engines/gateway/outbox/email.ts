// The alert e-mail channel of the durable outbox (durable-outbox.ts): alert() renders the message
// (email-render.ts) and writes an EmailDelivery row; due rows are sent over the AlertSettings SMTP
// server with nodemailer, and a row is marked delivered only once the server accepted it. While
// no SMTP server is configured the rows wait, without spending attempts.
import { randomUUID } from "node:crypto";
import type { Transporter } from "nodemailer";
import type { PrismaClient } from "../../../prisma/client";
import type { EmailDelivery } from "../../../prisma/generated/client";
import type { SmtpSettings } from "../../../schemas/kinds/alert-settings";
import type { KeyRef, WebhookEventName } from "../key-types";
import { DurableOutbox, FAILED_AT, type OutboxOptions, type SendRow } from "./durable-outbox";
import { EMAILED_EVENTS, renderAlertMail } from "./email-render";

/** nextAttemptAt of a row given up on: never due again (kept for inspection). */
export const EMAIL_FAILED_AT = FAILED_AT;

/** How long a claimed row is left to the replica sending it (longer than any one send with its
 * connection, greeting and socket timeouts); a replica that died mid-send leaves it due after. */
const CLAIM_MS = 10 * 60_000;

export interface EmailOutboxOptions extends OutboxOptions {
  /** the AlertSettings smtp block in force, read at every pass */
  smtp: () => SmtpSettings | undefined;
  /** budget_alerts.notify_email of a key, if it has one */
  recipientOf: (keyId: string) => string | undefined;
  resolveSecret: (ref: string) => string | undefined;
  /** connection, greeting and socket timeout (default 10 s) */
  timeoutMs?: number;
}

export class EmailOutbox extends DurableOutbox<EmailDelivery> {
  private transport: { id: string; t: Transporter } | undefined;
  private warnedUnconfigured = false;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly opts: EmailOutboxOptions,
  ) {
    // one message at a time over one SMTP connection, one batch a pass
    super(prisma.emailDelivery, { name: "email", concurrency: 1, drain: false }, opts);
  }

  /** Enqueue an alert e-mail when the event is one that is mailed and the key has notify_email. */
  alert(key: KeyRef, event: WebhookEventName, data: Record<string, unknown>): void {
    if (!EMAILED_EVENTS.has(event)) return;
    const to = this.opts.recipientOf(key.id);
    if (!to) return;
    const now = this.now();
    const mail = renderAlertMail(key, event, data, now);
    this.enqueue({ id: `mail_${randomUUID().replace(/-/g, "")}`, keyId: key.id, event, recipient: to, subject: mail.subject, body: mail.text, nextAttemptAt: now });
  }

  /** A send cannot be cut short: stop before the next message as soon as close() begins. */
  protected override stopped(): boolean {
    return this.closed;
  }

  protected async prepare(rows: EmailDelivery[]): Promise<SendRow<EmailDelivery> | undefined> {
    const smtp = this.opts.smtp();
    if (!smtp) {
      // Not an attempt: the rows wait until AlertSettings names an SMTP server.
      if (!this.warnedUnconfigured) this.log(`email: ${rows.length} alert e-mail(s) waiting: AlertSettings has no smtp server`);
      this.warnedUnconfigured = true;
      return undefined;
    }
    this.warnedUnconfigured = false;
    let transport: Transporter;
    try {
      transport = await this.transportFor(smtp);
    } catch (e: any) {
      for (const row of rows) await this.failed(row, String(e?.message ?? e));
      return undefined;
    }
    return async (row) => {
      // Replicas on one database (shared mode) read the same due rows: each sent them all, so an
      // alert was mailed once per replica (and each failure counted once per replica). The row is
      // claimed first, atomically, and a row another replica claimed (or already sent or failed
      // since this batch was read) is left to it. The claim only moves nextAttemptAt on: the
      // delivered/failed update below replaces it.
      if (!(await this.claim(row))) return false;
      try {
        await transport.sendMail({ from: smtp.from, to: row.recipient, subject: row.subject, text: row.body, messageId: `<${row.id}@svc>` });
        return await this.delivered(row);
      } catch (e: any) {
        return this.failed(row, `${e?.code ? `${e.code}: ` : ""}${e?.message ?? e}`);
      }
    };
  }

  /** True when this process now holds the row: still pending, as this batch read it, and due. */
  private async claim(row: EmailDelivery): Promise<boolean> {
    const now = this.now();
    const { count } = await this.prisma.emailDelivery.updateMany({
      where: { id: row.id, deliveredAt: null, attempts: row.attempts, nextAttemptAt: { lte: now } },
      data: { nextAttemptAt: new Date(now.getTime() + CLAIM_MS) },
    });
    return count === 1;
  }

  protected async release(): Promise<void> {
    this.transport?.t.close();
    this.transport = undefined;
  }

  /** nodemailer transport for the settings in force; rebuilt when they (or the password) change. */
  private async transportFor(s: SmtpSettings): Promise<Transporter> {
    const password = s.password ? this.opts.resolveSecret(s.password) : undefined;
    if (s.password && !password) throw new Error(`SMTP password ${s.password} could not be resolved`);
    const id = JSON.stringify([s, password]);
    if (this.transport?.id === id) return this.transport.t;
    this.transport?.t.close();
    const timeout = this.opts.timeoutMs ?? 10_000;
    const nodemailer = (await import("nodemailer")).default; // loaded with the first e-mail, not with svc
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
}
