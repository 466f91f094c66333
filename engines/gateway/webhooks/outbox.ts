// Durable webhook outbox. emit() writes a WebhookDelivery row (nothing is only in memory), a
// delivery loop POSTs due rows, and a row is marked delivered only after a 2xx: at-least-once.
// Failures back off exponentially; rows still pending at close() are picked up by the next
// start() on the same database, so deliveries survive a restart.
import { randomUUID } from "node:crypto";
import type dns from "node:dns";
import { Agent, request } from "undici";
import type { PrismaClient } from "../../../prisma/client";
import type { WebhookDelivery } from "../../../prisma/generated/client";
import type { KeyRef, WebhookEventName } from "../key-types";
import { sign } from "./signature";
import { guardedLookup, refuseReason } from "./url-policy";
import { outboundConnect } from "../../net/outbound-guard";
import { redactSecrets } from "../../secrets/redact";

export { verifySignature, sign } from "./signature";

/** nextAttemptAt of a row given up on (refused URL, attempts exhausted): never due again. */
export const FAILED_AT = new Date("9999-12-31T00:00:00.000Z");

export interface WebhookPayload {
  id: string;
  type: WebhookEventName;
  created_at: string;
  data: { key_id: string; key_name: string; [k: string]: unknown };
}

/**
 * What the payload column stores. The schema has no column for the signing-secret reference, so
 * the row keeps the reference (env:/file:, never the secret) next to the exact body it sends.
 */
interface StoredPayload {
  body: string;
  secret_ref?: string;
  /** the URL was named by a key that may reach only public receivers (url-policy.ts) */
  public_only?: boolean;
}

export interface WebhookOutboxOptions {
  resolveSecret(ref?: string): string | undefined;
  log?: (m: string) => void;
  /** delivery loop interval (default 1000 ms) */
  pollMs?: number;
  /** attempts before a row is left failed (default 12) */
  maxAttempts?: number;
  /** per-request timeout (default 10 s) */
  timeoutMs?: number;
  /** parallel deliveries per pass (default 4) */
  concurrency?: number;
  /** injected clock for tests */
  now?: () => Date;
  /** delay after the n-th failed attempt (default 1 s doubling to 1 h, +0-20% jitter) */
  backoffMs?: (attempt: number) => number;
  /** name resolution for public-only receivers (default dns.lookup; tests inject one) */
  lookup?: typeof dns.lookup;
}

export function defaultBackoffMs(attempt: number): number {
  const base = Math.min(3_600_000, 1000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 + Math.random() * 0.2)); // jitter spreads retries of many rows
}

export class WebhookOutbox {
  private readonly log: (m: string) => void;
  private readonly pollMs: number;
  private readonly maxAttempts: number;
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private readonly now: () => Date;
  private readonly backoffMs: (attempt: number) => number;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private closed = false;
  private readonly writes = new Set<Promise<unknown>>();
  private passChain: Promise<unknown> = Promise.resolve();
  private queuedPasses = 0;
  /** aborts in-flight requests on close(); those rows stay pending, untouched */
  private abort = new AbortController();
  /** own connection pool, closed with the outbox so no keep-alive socket outlives it */
  private readonly agent: Agent;
  /** the pool for public-only receivers: every new connection checks the resolved address */
  private readonly publicAgent: Agent;
  private lastPrune = 0;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly opts: WebhookOutboxOptions,
  ) {
    this.log = opts.log ?? ((m) => console.error(m));
    this.pollMs = opts.pollMs ?? 1000;
    this.maxAttempts = opts.maxAttempts ?? 12;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.concurrency = Math.max(1, opts.concurrency ?? 4);
    this.now = opts.now ?? (() => new Date());
    this.backoffMs = opts.backoffMs ?? defaultBackoffMs;
    const pool = { connections: this.concurrency, connectTimeout: this.timeoutMs, headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs };
    this.agent = new Agent({ ...pool, ...outboundConnect(this.timeoutMs) });
    this.publicAgent = new Agent({ ...pool, ...outboundConnect(this.timeoutMs, { lookup: guardedLookup(opts.lookup) }) });
  }

  /** Enqueue durably when the key's webhook is enabled and lists the event; otherwise a no-op. */
  emit(key: KeyRef, event: WebhookEventName, data: Record<string, unknown>): void {
    const wh = key.webhook;
    if (!wh || wh.enabled === false || !wh.url || !(wh.events ?? []).includes(event)) return;
    const now = this.now();
    const payload: WebhookPayload = {
      id: `evt_${randomUUID().replace(/-/g, "")}`,
      type: event,
      created_at: now.toISOString(),
      // key_id/key_name first and not overridable by the event's own data
      data: Object.assign(
        { key_id: key.id, key_name: key.name },
        key.organizationId ? { organization_id: key.organizationId } : {},
        data,
        { key_id: key.id, key_name: key.name },
      ),
    };
    const stored: StoredPayload = { body: JSON.stringify(payload), secret_ref: wh.secret, ...(key.webhookPublicOnly ? { public_only: true } : {}) };
    const refused = refuseReason(wh.url, { internal: !key.webhookPublicOnly });
    if (refused) this.log(`webhook: ${event} for key ${key.id} will not be sent: ${refused}`);
    const w = this.prisma.webhookDelivery
      .create({
        data: { id: payload.id, keyId: key.id, event, url: wh.url, payload: JSON.stringify(stored), nextAttemptAt: now },
      })
      .then(
        () => this.kick(),
        (e) => this.log(`webhook: could not enqueue ${event} for key ${key.id}: ${String(e?.message ?? e)}`),
      )
      .finally(() => this.writes.delete(w));
    this.writes.add(w);
  }

  /** Begin delivering, including rows left pending by a previous run. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.timer = setInterval(() => this.kick(), this.pollMs);
    this.timer.unref();
    this.kick();
  }

  /** Stop delivering; in-flight requests are aborted and their rows stay pending. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.writes]);
    this.abort.abort();
    await this.passChain.catch(() => undefined);
    await Promise.all([this.agent.destroy().catch(() => undefined), this.publicAgent.destroy().catch(() => undefined)]);
  }

  /** One delivery pass over due rows; resolves to the number delivered. Passes never overlap. */
  deliverDue(): Promise<number> {
    const run = this.passChain.then(() => this.runPass());
    this.passChain = run.catch(() => 0);
    return run;
  }

  /** Background pass: coalesced, so a slow receiver does not pile up passes. */
  private kick(): void {
    if (!this.started || this.closed || this.queuedPasses > 1) return;
    this.queuedPasses++;
    this.deliverDue()
      .catch((e) => this.log(`webhook: delivery pass failed: ${String(e?.message ?? e)}`))
      .finally(() => this.queuedPasses--);
  }

  private async runPass(): Promise<number> {
    // Rows emitted just before this pass must be visible to it.
    await Promise.allSettled([...this.writes]);
    if (this.closed && this.abort.signal.aborted) return 0;
    await this.prune();
    let delivered = 0;
    // Bounded batches; loop while a full batch came back so a backlog drains in one pass.
    for (;;) {
      const rows = await this.prisma.webhookDelivery.findMany({
        where: { deliveredAt: null, nextAttemptAt: { lte: this.now() } },
        orderBy: [{ nextAttemptAt: "asc" }, { createdAt: "asc" }],
        take: 50,
      });
      if (rows.length === 0) break;
      let next = 0;
      const worker = async () => {
        while (next < rows.length && !this.abort.signal.aborted) {
          const row = rows[next++];
          if (await this.deliverOne(row)) delivered++;
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.concurrency, rows.length) }, worker));
      if (rows.length < 50 || this.abort.signal.aborted) break;
    }
    return delivered;
  }

  private async deliverOne(row: WebhookDelivery): Promise<boolean> {
    let stored: StoredPayload;
    try {
      stored = JSON.parse(row.payload);
      if (typeof stored.body !== "string") throw new Error("no body");
    } catch {
      await this.prisma.webhookDelivery.update({ where: { id: row.id }, data: { nextAttemptAt: FAILED_AT, lastError: "stored payload is unreadable" } });
      return false;
    }
    const publicOnly = stored.public_only === true;
    const refused = refuseReason(row.url, { internal: !publicOnly });
    if (refused) {
      // Never called: parked as failed with the reason, attempts untouched.
      await this.prisma.webhookDelivery.update({ where: { id: row.id }, data: { nextAttemptAt: FAILED_AT, lastError: refused } });
      this.log(`webhook: ${row.event} ${row.id} for key ${row.keyId} refused, not sent: ${refused}`);
      return false;
    }
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "svc-webhooks/1",
      "svc-webhook-id": row.id,
    };
    const ts = Math.floor(this.now().getTime() / 1000);
    headers["svc-webhook-timestamp"] = String(ts);
    if (stored.secret_ref) {
      const secret = this.opts.resolveSecret(stored.secret_ref);
      // A reference that does not resolve (env var unset) is retried: it may be fixed meanwhile.
      if (!secret) return this.failed(row, `webhook secret ${stored.secret_ref} could not be resolved`);
      headers["svc-webhook-signature"] = sign(secret, ts, stored.body);
    }
    let error: string;
    try {
      const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.timeoutMs)]);
      // redirects are not followed (undici's default): a 3xx is a failed attempt like any non-2xx
      const res = await request(row.url, { method: "POST", headers, body: stored.body, signal, dispatcher: publicOnly ? this.publicAgent : this.agent });
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      if (res.statusCode >= 200 && res.statusCode < 300) {
        await this.prisma.webhookDelivery.update({
          where: { id: row.id },
          data: { deliveredAt: this.now(), attempts: { increment: 1 }, lastError: null },
        });
        return true;
      }
      error = res.statusCode >= 300 && res.statusCode < 400 ? `receiver answered HTTP ${res.statusCode} (redirects are not followed)` : `receiver answered HTTP ${res.statusCode}`;
    } catch (e: any) {
      // Shutting down: leave the row exactly as it was for the next start.
      if (this.abort.signal.aborted) return false;
      if (e?.code === "ERR_WEBHOOK_INTERNAL_ADDRESS") {
        // the name now points inside: never retried into it, parked as failed with the reason
        const why = `${e.message} (only the administrator may name an internal receiver)`;
        await this.prisma.webhookDelivery.update({ where: { id: row.id }, data: { nextAttemptAt: FAILED_AT, attempts: { increment: 1 }, lastError: why } });
        this.log(`webhook: ${row.event} ${row.id} for key ${row.keyId} not sent: ${why}`);
        return false;
      }
      error = e?.name === "TimeoutError" || e?.code === "UND_ERR_HEADERS_TIMEOUT" ? `timed out after ${this.timeoutMs} ms` : `request failed: ${e?.code ?? ""} ${e?.message ?? e}`.trim();
    }
    return this.failed(row, error);
  }

  /** Hourly housekeeping: delivered rows are kept 7 days, failed ones 30 (for inspection). */
  private async prune(): Promise<void> {
    const now = this.now().getTime();
    if (now - this.lastPrune < 3_600_000) return;
    this.lastPrune = now;
    try {
      await this.prisma.webhookDelivery.deleteMany({
        where: {
          OR: [
            { deliveredAt: { lt: new Date(now - 7 * 86_400_000) } },
            { deliveredAt: null, nextAttemptAt: FAILED_AT, createdAt: { lt: new Date(now - 30 * 86_400_000) } },
          ],
        },
      });
    } catch (e: any) {
      this.log(`webhook: pruning old deliveries failed: ${String(e?.message ?? e)}`);
    }
  }

  private async failed(row: WebhookDelivery, error: string): Promise<false> {
    const attempts = row.attempts + 1;
    const giveUp = attempts >= this.maxAttempts;
    await this.prisma.webhookDelivery.update({
      where: { id: row.id },
      data: {
        attempts,
        lastError: giveUp ? `gave up after ${attempts} attempts: ${error}` : error,
        nextAttemptAt: giveUp ? FAILED_AT : new Date(this.now().getTime() + this.backoffMs(attempts)),
      },
    });
    // one line per failed attempt: what failed and what happens next (the reason names no secret:
    // a receiver's status, a timeout, or a reference that does not resolve)
    const reason = redactSecrets(error);
    if (giveUp) this.log(`webhook: gave up on ${row.event} ${row.id} for key ${row.keyId} after ${attempts} attempts: ${reason}`);
    else this.log(`webhook: ${row.event} ${row.id} for key ${row.keyId} failed (attempt ${attempts} of ${this.maxAttempts}; retrying later): ${reason}`);
    return false;
  }
}
