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
  /** the quantity of `price.unit` the answer reports (a transcription's duration in minutes):
   * the call is settled at that, instead of the quantity reserved; undefined keeps the reservation */
  actualQuantity?: (result: any) => number | undefined;
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
  // what the call is settled at; read by the gate once `work` is done (Gate.call -> run -> finish)
  const outcome: { costMicros?: number } = {};
  return c.gate.call(
    c.caller,
    call,
    async (v) => {
      setHeaders(ctx, rateHeaders(v.rate));
      const chosen = (v.targets ?? op.candidates)?.[0];
      // a credential that does not resolve fails the admitted call: released and audited
      const r = await work(chosen ? mediaOf(svc).resolve(chosen) : (undefined as unknown as MediaTarget));
      // the reservation was an estimate (a transcription reserves one minute): settle the actual
      // quantity the answer reports, else a ten-minute recording was charged one minute
      if (op.metered && op.price && op.spendMicros === undefined && op.actualQuantity && chosen) {
        const q = op.actualQuantity(r);
        const actual = q === undefined ? undefined : mediaPrice(svc.store, chosen.provider, op.model, op.price.unit, q).spendMicros;
        if (actual !== undefined) outcome.costMicros = actual;
      }
      return r;
    },
    () => outcome,
  );
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
  if (contentType.includes("multipart/form-data")) return multipartField(body, contentType, field);
  return undefined;
}

/** A text field of a multipart/form-data body, found part by part along the boundary. (Only the
 * first MiB used to be searched: with a large file before `model` and `n`, as clients send an
 * image first, the call went out with no model, so permissions.models was not applied and the
 * price was one image of no model.) */
function multipartField(body: Buffer, contentType: string, field: string): string | undefined {
  const b = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!b) return undefined;
  const delim = Buffer.from(`--${b[1] ?? b[2]}`, "latin1");
  const between = Buffer.concat([Buffer.from("\r\n"), delim]);
  let at = body.indexOf(delim);
  while (at !== -1) {
    const start = at + delim.length;
    if (body[start] === 0x2d && body[start + 1] === 0x2d) return undefined; // the closing delimiter
    const headEnd = body.indexOf("\r\n\r\n", start);
    if (headEnd === -1) return undefined;
    const next = body.indexOf(between, headEnd + 4);
    const head = body.subarray(start, headEnd).toString("latin1");
    const disposition = /content-disposition:([^\r\n]*)/i.exec(head)?.[1] ?? "";
    if (/;\s*name="?([^";]*)"?/i.exec(disposition)?.[1] === field && !/filename\*?=/i.test(disposition)) {
      const v = body.subarray(headEnd + 4, next === -1 ? body.length : next).toString("utf8");
      return v.length >= 1 && v.length <= 500 && !/[\r\n]/.test(v) ? v : undefined;
    }
    at = next === -1 ? -1 : next + 2;
  }
  return undefined;
}
