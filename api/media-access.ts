// The media routes and /credits/balance at the gate (engines/gateway/gate.ts): the key is
// admitted with the `inference` scope before the body is read; each call is then described to
// the gate (action media:<operation>, model, provider, price) which runs the key's permissions,
// policy statements, rate limits, max_requests and budgets, and writes the audit entry.
// Prices: Provider spec.models[].perImage / perVideoSecond / perAudioMinute; a budgeted key is
// refused for a call without one, naming the missing price.
import type { HttpContext } from "./http-context";
import type { Svc } from "../engines/svc";
import type { KeyEntry } from "../engines/gateway/keys";
import type { Caller } from "../engines/gateway/pipeline-types";
import type { Gate, GateCall } from "../engines/gateway/gate";
import type { Media, MediaCandidate, MediaTarget } from "../engines/media";
import { SvcError } from "../engines/errors";
import { mediaPrice, type MediaUnit } from "../engines/gateway/media-prices";
import { callerFrom, setHeaders } from "./caller";
import { rateHeaders } from "./errors";

export function mediaOf(svc: Svc): Media {
  const m = svc.engines.media;
  if (!m) throw new SvcError("unavailable", "model_unavailable", "media routes are unavailable: the media engine did not start (see the server log)");
  return m;
}

export interface MediaCall {
  gate: Gate;
  caller: Caller;
  key: KeyEntry | null;
}

function gateOf(svc: Svc): Gate {
  const gw = svc.engines.gateway;
  if (!gw) throw new SvcError("unavailable", "model_unavailable", "media routes are unavailable: the gateway engine (authentication) is not running");
  return gw.gate;
}

/** Authenticate and check the key's use (IP allowlist, role, inference scope) before the body. */
export function admitMedia(svc: Svc, ctx: HttpContext, audit: string): MediaCall {
  const gate = gateOf(svc);
  const caller = callerFrom(ctx);
  const key = gate.admit(caller, "inference", audit);
  if (key) ctx.state.keyId = key.id;
  return { gate, caller, key };
}

export interface MediaOp {
  /** audit action: media.images.generations, credits.balance, ... (the policy action is media:<operation>) */
  audit: string;
  model?: string;
  /** the providers that could serve the call (Media.candidates); the gate keeps those the key's
   * policy allows, and the call goes to the first */
  candidates?: readonly MediaCandidate[];
  /** or the one provider a stored job is at (polls, content, cancel) */
  provider?: string;
  /** counted against rate limits, max_requests and budgets (false: polls, cancel, balance) */
  metered: boolean;
  /** how the call is priced: unit and quantity; absent with metered: a free call (a quote) */
  price?: { unit: MediaUnit; quantity: number };
  /** a price fixed beforehand in micro-USD (a quoted video job): charged instead of `price` */
  spendMicros?: number;
  jobId?: string;
}

/** One media call through the gate (Gate.call): the gate keeps the candidates the key's policy
 * allows, prices the call on the first of them and admits it; `work` gets that provider resolved
 * (a job's call, naming `provider`, resolves its own target); the call is then settled and
 * audited. The x-ratelimit-* state goes on the response. */
export function callMedia<R>(svc: Svc, ctx: HttpContext, c: MediaCall, op: MediaOp, work: (t: MediaTarget) => Promise<R>): Promise<R> {
  const first = op.candidates?.[0];
  const call: GateCall<MediaCandidate> = {
    action: op.audit.startsWith("media.") ? `media:${op.audit.slice(6)}` : `media:${op.audit}`,
    scope: "inference",
    audit: op.audit,
    model: op.model,
    provider: first?.provider ?? op.provider,
    targets: op.candidates,
    metered: op.metered,
    metadata: op.jobId ? { job_id: op.jobId } : {},
  };
  if (op.metered) {
    if (op.spendMicros !== undefined) call.spendMicros = op.spendMicros;
    else if (op.price) {
      const { unit, quantity } = op.price;
      call.priceOf = (t) => mediaPrice(svc.store, t.provider, op.model, unit, quantity);
      if (first) Object.assign(call, call.priceOf(first)); // without a key (loopback) the first is used
    } else call.spendMicros = 0;
  }
  return c.gate.call(c.caller, call, (v) => {
    setHeaders(ctx, rateHeaders(v.rate));
    const chosen = (v.targets ?? op.candidates)?.[0];
    // a credential that does not resolve fails the admitted call: released and audited
    return work(chosen ? mediaOf(svc).resolve(chosen) : (undefined as unknown as MediaTarget));
  });
}

/** May this caller see a job? Jobs made with a key: that key or the admin key; without: loopback. */
export function mayView(c: MediaCall, ownerKeyId: string | null): boolean {
  return ownerKeyId ? !!c.key && (c.key.id === ownerKeyId || c.key.role === "admin") : c.caller.loopback;
}

/** The `model` of a JSON body, or of a multipart/form-data body (its `model` field). */
export function modelOf(body: Buffer, contentType: string): string | undefined {
  return fieldOf(body, contentType, "model");
}

/** `n` (images asked for) of a JSON or multipart body; 1 when absent. */
export function countOf(body: Buffer, contentType: string): number {
  const n = Number(fieldOf(body, contentType, "n") ?? 1);
  return Number.isInteger(n) && n > 0 ? Math.min(n, 100) : 1;
}

function fieldOf(body: Buffer, contentType: string, field: string): string | undefined {
  if (contentType.includes("json")) {
    let v: unknown;
    try {
      v = JSON.parse(body.toString("utf8"))?.[field];
    } catch {
      throw new SvcError("invalid", "invalid_request", "request body is not valid JSON");
    }
    return typeof v === "string" ? v : field !== "model" && typeof v === "number" ? String(v) : undefined;
  }
  if (contentType.includes("multipart/form-data")) {
    const head = body.subarray(0, 1 << 20).toString("latin1");
    const m = new RegExp(`content-disposition:\\s*form-data;\\s*name="${field}"\\r\\n(?:[^\\r\\n]+\\r\\n)*\\r\\n([^\\r\\n]{1,500})\\r\\n`, "i").exec(head);
    return m?.[1];
  }
  return undefined;
}
