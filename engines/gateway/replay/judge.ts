// One audit entry through one state's gate, at the entry's time: the steps and functions the
// chat pipeline (pipeline.ts chat/embed) runs before and after forwarding — key state, key use
// (IP allowlist, scope), routing by model name, policy (Gate.authorize), the price estimate and
// the limits (Gate.reserve), then settlement with the recorded usage at this state's prices
// (Gate.finish) — with the recorded tokens in place of the prompt (prompts are never read).
import type { Caller } from "../pipeline-types";
import type { Verdict } from "../gate";
import { keyState } from "../keys";
import { DEFAULT_OUTPUT_RESERVE } from "../pipeline";
import { keyCurrency } from "../limits/currency";
import { LimitRefusal } from "../limits/refusal";
import { SvcError, modelNotFound } from "../../errors";
import { costMicros, type RouteTarget } from "../../providers/types";
import type { RoutedTarget } from "../../providers/balancer";
import type { ReplayEntry } from "./entries";
import type { ReplayWorld } from "./world";

/** Audit names of the model calls a replay judges (the chat pipeline's). */
export const MODEL_CALLS: ReadonlySet<string> = new Set(["chat.completions", "chat.stream", "embeddings"]);

/** Recorded outcomes of a call the gate admitted and the upstream then failed. */
const UPSTREAM_FAILURES = new Set(["upstream_error", "upstream_timeout", "internal_error"]);
const UPSTREAM = new SvcError("upstream", "upstream_error", "recorded upstream failure");

export interface Judged {
  refused?: { code: string; limit?: string; message: string };
  /** where the call goes in this state (a balanced Model: the deployment drawn) */
  provider?: string;
  model?: string;
  /** micro-USD at this state's prices for the recorded usage (0 when refused) */
  usdMicros: number;
}

/** A judgement without its spend: what the worker's outcome table holds (columns.ts). */
export type Outcome = Omit<Judged, "usdMicros">;

/** Verdict.ts is the audit row's time: a replay writes no audit row, so one date serves all. */
const NO_ROW_TIME = new Date(0);

const AUTH = { key_revoked: "this API key has been revoked", key_expired: "this API key has expired", invalid_api_key: "no such API key in this state" } as const;

function refusal(e: unknown): Judged {
  if (e instanceof SvcError) return { refused: { code: e.code, limit: e instanceof LimitRefusal ? e.tripped : undefined, message: e.message }, usdMicros: 0 };
  return { refused: { code: "internal_error", message: String((e as Error)?.message ?? e) }, usdMicros: 0 };
}

/** The provider and model a target serves with (a balanced Model: its drawn deployment's). */
function served(t: RouteTarget): { provider: string; model: string } {
  const d = (t as Partial<RoutedTarget>).first?.target;
  return d ? { provider: d.provider, model: d.model } : { provider: t.provider, model: t.model };
}

export function judge(w: ReplayWorld, e: ReplayEntry): Judged {
  w.t = e.ts;
  // this entry's balanced-route draw depends on its place in the window only (world.ts drawsFor)
  w.drawsFor(w.judged++);
  const now = e.ts;
  const key = w.keys.get(e.keyId);
  if (!key) return { refused: { code: "invalid_api_key", message: AUTH.invalid_api_key }, usdMicros: 0 };
  const st = keyState(key, now);
  if (st !== "active") {
    const code = st === "revoked" ? "key_revoked" : "key_expired";
    return { refused: { code, message: AUTH[code] }, usdMicros: 0 };
  }
  const stream = e.action === "chat.stream";
  const embed = e.action === "embeddings";
  const action = embed ? "embeddings" : stream ? "chat:stream" : "chat:completions";
  // Caller.route labels metrics only, and a replay reports none: the audit name stands in
  const caller: Caller = { ip: e.ip ?? "", loopback: false, requestId: e.id, route: e.action, key };
  const v: Verdict = { caller, key, call: { action, scope: "inference", audit: e.action, model: e.model ?? undefined, metadata: {} }, adm: undefined, rate: undefined, t0: 0, ts: NO_ROW_TIME };
  let target: RouteTarget | undefined;
  try {
    w.gate.use(key, caller, "inference", undefined, "inference");
    if (!e.model) throw modelNotFound("");
    const routing = e.routing;
    let cands = w.router.targets(e.model, !embed && routing?.strategy === "cost-optimized");
    if (cands.length === 0) throw modelNotFound(e.model);
    if (key.role === "key") {
      cands = w.gate.authorize(key, action, e.model, cands, now);
      if ((embed || routing?.fallback !== true) && cands.length > 1) cands = cands.slice(0, 1);
      // the pipeline's estimate, with the recorded prompt size in place of the prompt
      const held = e.promptTokens;
      const reserveOut = embed ? 0 : DEFAULT_OUTPUT_RESERVE;
      let spend = 0;
      for (const t of cands) spend = Math.max(spend, w.gate.keyCost(key, t, costMicros(t, held, reserveOut), e.model, now));
      w.gate.reserve(v, { spend, currency: keyCurrency(key), tokens: held + reserveOut, requestTokens: held, promptTokens: held, priced: true, model: e.model }, now);
    }
    target = cands[0];
  } catch (err) {
    w.gate.refused(v, err);
    return refusal(err);
  }
  const where = served(target);
  v.call.provider = where.provider;
  // A recorded failure or cancellation without usage ended before the answer: the live gate
  // released it (refused(): settled at zero, the request given back). One with usage failed or
  // was cancelled mid-answer: the live pipeline settled it like a success, with the tokens it
  // counted (pipeline.ts finish), so it counts toward budgets, token limits and max_requests.
  if ((UPSTREAM_FAILURES.has(e.status) || e.status === "cancelled") && e.promptTokens === 0 && e.completionTokens === 0) {
    w.gate.failed(v, UPSTREAM);
    return { provider: where.provider, model: where.model, usdMicros: 0 };
  }
  // a call refused when it was recorded has no usage to settle: admitted here, it is counted at 0
  // A balanced route is settled at the prices of the deployment drawn, as the live balancer
  // does once it adopts it (balancer.ts adopt); the routed target itself carries the highest
  // prices of the group, which only the estimate uses.
  const priced = (target as Partial<RoutedTarget>).first?.target ?? target;
  const priceCost = costMicros(priced, e.promptTokens, e.completionTokens);
  const usd = w.limits.usd(priceCost, priced.currency);
  w.gate.finish(v, {
    status: "success",
    provider: where.provider,
    costMicros: v.adm ? w.gate.keyCost(key, priced, priceCost, e.model!) : priceCost,
    usdMicros: usd,
    promptTokens: e.promptTokens,
    completionTokens: e.completionTokens,
  });
  return { provider: where.provider, model: where.model, usdMicros: usd };
}

/** A page's judgements in one state, in order (null: an entry that is not a model call). */
export function judgePage(w: ReplayWorld, page: readonly ReplayEntry[]): Array<Judged | null> {
  return page.map((e) => (MODEL_CALLS.has(e.action) ? judge(w, e) : null));
}
