// The webhook channel of the durable outbox (durable-outbox.ts): emit() writes a WebhookDelivery
// row, and each due row is POSTed, signed, to the key's URL; any 2xx marks it delivered. URLs are
// checked against the key's policy (webhooks/url-policy.ts) when emitted and again when sent.
import { randomUUID } from "node:crypto";
import type dns from "node:dns";
import { Agent, request } from "undici";
import type { PrismaClient } from "../../../prisma/client";
import type { WebhookDelivery } from "../../../prisma/generated/client";
import type { KeyRef, WebhookEventName } from "../key-types";
import { sign } from "../webhooks/signature";
import { guardedLookup, refuseReason } from "../webhooks/url-policy";
import { outboundConnect } from "../../net/outbound-guard";
import { DurableOutbox, FAILED_AT, type OutboxOptions, type SendRow } from "./durable-outbox";

export { verifySignature, sign } from "../webhooks/signature";
export { FAILED_AT, defaultBackoffMs } from "./durable-outbox";

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

export interface WebhookOutboxOptions extends OutboxOptions {
  resolveSecret(ref?: string): string | undefined;
  /** per-request timeout (default 10 s) */
  timeoutMs?: number;
  /** parallel deliveries per pass (default 4) */
  concurrency?: number;
  /** name resolution for public-only receivers (default dns.lookup; tests inject one) */
  lookup?: typeof dns.lookup;
}

export class WebhookOutbox extends DurableOutbox<WebhookDelivery> {
  private readonly timeoutMs: number;
  /** own connection pool, closed with the outbox so no keep-alive socket outlives it */
  private readonly agent: Agent;
  /** the pool for public-only receivers: every new connection checks the resolved address */
  private readonly publicAgent: Agent;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly opts: WebhookOutboxOptions,
  ) {
    const concurrency = Math.max(1, opts.concurrency ?? 4);
    // a backlog drains in one pass, in batches
    super(prisma.webhookDelivery, { name: "webhook", concurrency, drain: true }, opts);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    const pool = { connections: concurrency, connectTimeout: this.timeoutMs, headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs };
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
    this.enqueue({ id: payload.id, keyId: key.id, event, url: wh.url, payload: JSON.stringify(stored), nextAttemptAt: now });
  }

  protected async prepare(): Promise<SendRow<WebhookDelivery>> {
    return (row) => this.deliverOne(row);
  }

  protected async release(): Promise<void> {
    await Promise.all([this.agent.destroy().catch(() => undefined), this.publicAgent.destroy().catch(() => undefined)]);
  }

  private async deliverOne(row: WebhookDelivery): Promise<boolean> {
    let stored: StoredPayload;
    try {
      stored = JSON.parse(row.payload);
      if (typeof stored.body !== "string") throw new Error("no body");
    } catch {
      return this.park(row, "stored payload is unreadable");
    }
    const publicOnly = stored.public_only === true;
    const refused = refuseReason(row.url, { internal: !publicOnly });
    // Never called: parked as failed with the reason, attempts untouched.
    if (refused) {
      this.log(`webhook: ${row.event} ${row.id} for key ${row.keyId} refused, not sent: ${refused}`);
      return this.park(row, refused);
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
      if (res.statusCode >= 200 && res.statusCode < 300) return this.delivered(row);
      error = res.statusCode >= 300 && res.statusCode < 400 ? `receiver answered HTTP ${res.statusCode} (redirects are not followed)` : `receiver answered HTTP ${res.statusCode}`;
    } catch (e: any) {
      // Shutting down: leave the row exactly as it was for the next start.
      if (this.abort.signal.aborted) return false;
      if (e?.code === "ERR_WEBHOOK_INTERNAL_ADDRESS") {
        // the name now points inside: never retried into it, parked as failed with the reason
        const why = `${e.message} (only the administrator may name an internal receiver)`;
        await this.park(row, why, { attempts: { increment: 1 } });
        this.log(`webhook: ${row.event} ${row.id} for key ${row.keyId} not sent: ${why}`);
        return false;
      }
      error = e?.name === "TimeoutError" || e?.code === "UND_ERR_HEADERS_TIMEOUT" ? `timed out after ${this.timeoutMs} ms` : `request failed: ${e?.code ?? ""} ${e?.message ?? e}`.trim();
    }
    return this.failed(row, error);
  }

  /** Given up on at once, with the reason: a row that can never be sent is not retried. */
  private async park(row: WebhookDelivery, lastError: string, also?: { attempts: { increment: number } }): Promise<false> {
    await this.prisma.webhookDelivery.update({ where: { id: row.id }, data: { nextAttemptAt: FAILED_AT, ...also, lastError } });
    return false;
  }
}
