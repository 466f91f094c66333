// Auth, permissions and audit for the media routes and /credits/balance. Media spends the
// calling key like inference: authentication, IP allowlist and the `inference` scope come from
// the gateway pipeline (admit); permissions.models applies to the model named; every call made
// with a key leaves an audit entry (action media.<operation>). Media has no price in svc, so keys
// with a budget are refused (403) rather than counted as free, as for unpriced chat models.
import type { HttpContext } from "./http-context";
import type { Svc } from "../engines/svc";
import type { KeyEntry } from "../engines/gateway/keys";
import type { Caller } from "../engines/gateway/pipeline-types";
import type { Media } from "../engines/media";
import { GatewayError } from "../engines/gateway/errors";
import { globMatch } from "../engines/gateway/policy";
import { callerFrom } from "./caller";

export function mediaOf(svc: Svc): Media {
  const m = svc.engines.media;
  if (!m) throw new GatewayError(503, "model_unavailable", "media routes are unavailable: the media engine did not start (see the server log)");
  return m;
}

export interface MediaCall {
  caller: Caller;
  key: KeyEntry | null;
  started: number;
}

export function admitMedia(svc: Svc, ctx: HttpContext): MediaCall {
  const gw = svc.engines.gateway;
  if (!gw) throw new GatewayError(503, "model_unavailable", "media routes are unavailable: the gateway engine (authentication) is not running");
  const caller = callerFrom(ctx);
  const key = gw.pipeline.admit(caller);
  caller.key = key;
  if (key && gw.limits.needsPrice(key)) {
    throw new GatewayError(403, "permission_denied", "media routes have no price in svc; a key with a budget (its own, its team's or its organization's) cannot use them");
  }
  return { caller, key, started: Date.now() };
}

export function allowModel(c: MediaCall, model: string | undefined): void {
  const models = c.key?.spec.permissions?.models;
  if (models && model !== undefined && !models.some((g) => globMatch(g, model))) {
    throw new GatewayError(403, "permission_denied", `model ${JSON.stringify(model)} is not in this key's permissions.models`, "model");
  }
}

/** One audit entry per media call made with a key (anonymous loopback calls have no log). */
export function auditMedia(svc: Svc, c: MediaCall, action: string, r: { status: string; provider?: string; model?: string; jobId?: string }): void {
  const k = c.key;
  if (!k) return;
  svc.engines.gateway?.audit.record({
    timestamp: new Date(c.started),
    apiKeyId: k.id,
    apiKeyName: k.name,
    organizationId: k.spec.organization_id,
    requestId: c.caller.requestId,
    action,
    model: r.model,
    provider: r.provider,
    status: r.status,
    errorCode: r.status === "success" ? undefined : r.status,
    latencyMs: Date.now() - c.started,
    promptTokens: 0,
    completionTokens: 0,
    costMicros: 0n,
    metadata: r.jobId ? { job_id: r.jobId } : {},
    ipAddress: c.caller.ip,
    userAgent: c.caller.userAgent,
  });
}

/** May this caller see a job? Jobs made with a key: that key or the admin key; without: loopback. */
export function mayView(c: MediaCall, ownerKeyId: string | null): boolean {
  return ownerKeyId ? !!c.key && (c.key.id === ownerKeyId || c.key.role === "admin") : c.caller.loopback;
}

/** The `model` of a JSON body, or of a multipart/form-data body (its `model` field). */
export function modelOf(body: Buffer, contentType: string): string | undefined {
  if (contentType.includes("json")) {
    try {
      const m = JSON.parse(body.toString("utf8"))?.model;
      return typeof m === "string" ? m : undefined;
    } catch {
      throw new GatewayError(400, "invalid_request", "request body is not valid JSON");
    }
  }
  if (contentType.includes("multipart/form-data")) {
    const head = body.subarray(0, 1 << 20).toString("latin1");
    const m = /content-disposition:\s*form-data;\s*name="model"\r\n(?:[^\r\n]+\r\n)*\r\n([^\r\n]{1,500})\r\n/i.exec(head);
    return m?.[1];
  }
  return undefined;
}
