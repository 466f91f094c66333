// Limits shared by several replicas (scale-out): with a shared limit store (Redis, see
// engines/cluster/shared-limits.ts) every check and reservation of a request is made there,
// atomically, in one round trip (shared with the other requests of its event-loop turn); the
// in-memory counters of limits.ts are not used. This file is the engine side: what a request
// asks for, and the refusal (same codes and messages as the in-memory limits) its answer turns
// into. It is one AdmissionStrategy of Limits (limits.ts), the
// embedded one being the other.
import { SvcError } from "../../errors";
import { AUTH_MESSAGES, type KeyEntry } from "../keys";
import { LimitRefusal } from "./refusal";
import { usd, type EffectiveLimits } from "./usage";
import { checksOf, type Check, type Entities } from "./checks";
import type { RateState } from "../../errors";
import type { Admission, AdmissionStrategy, Estimate, LimitsHost, SharedCheck, SharedHold, SharedLimitStore, SharedRequest, SharedUsage, SharedVerdict } from "./types";
import { PeriodCounter, type EntityUsage } from "./usage";

export type { SharedCheck, SharedRequest, SharedRate, SharedVerdict, SharedUsage, SharedLimitStore, SharedHold } from "./types";

/** The rate window of a verdict (the same the embedded limits report, limits/key-rates.ts). */
export function sharedRate(v: SharedVerdict): RateState | undefined {
  const r = v[v.length - 1];
  if (!Array.isArray(r) || r.length !== 3) return undefined;
  return { limit: Number(r[0]), remaining: Number(r[1]), resetSeconds: Math.ceil(Number(r[2]) / 1000) };
}

/** Build the request for a key (`checks` from checksOf, entities key/team/org). */
export function sharedRequest(k: KeyEntry, lim: EffectiveLimits, ents: string[], checks: Check[], day: string, month: string, spend: number, tokens: number, known = false): SharedRequest {
  const sc: SharedCheck[] = checks.map((c) => ({
    e: c.usage.id,
    whose: c.whose,
    td: c.lim.tokensDaily,
    tm: c.lim.tokensMonthly,
    bd: c.lim.budgetDaily,
    bm: c.lim.budgetMonthly,
    bt: c.lim.budgetTotal,
    ...(c.lim.currency !== "USD" ? { cur: c.lim.currency } : {}),
  }));
  const rate = lim.perMinute !== undefined || lim.perHour !== undefined || lim.perDay !== undefined;
  return {
    k: k.id,
    lim: rate || sc.length > 0 || lim.maxRequests !== undefined,
    pm: lim.perMinute,
    burst: lim.burst,
    ph: lim.perHour,
    pd: lim.perDay,
    mr: lim.maxRequests,
    ents,
    day,
    month,
    s: Math.max(0, Math.round(spend)),
    t: Math.max(0, Math.round(tokens)),
    checks: sc,
    ...(known && spend > 0 ? { kn: true } : {}),
  };
}

export class SharedStoreUnavailable extends Error {}

/** The error a refusal verdict stands for (null: admitted); `h` is the key's rate window. */
export function refusalOf(v: SharedVerdict, r: SharedRequest, lim: EffectiveLimits, h?: RateState, over?: LimitRefusal): SvcError | null {
  switch (v[0]) {
    case "ok":
      return null;
    case "revoked":
      return new SvcError("unauthenticated", "key_revoked", AUTH_MESSAGES.key_revoked);
    case "rate": {
      const retry = Math.max(1, Math.ceil(v[2] / 1000));
      const limit = v[1] === "per_minute" ? `per_minute=${lim.perMinute}` : v[1] === "per_hour" ? `per_hour=${lim.perHour}` : `per_day=${lim.perDay}`;
      const which = v[1] === "per_minute" && lim.burst !== undefined && lim.burst !== lim.perMinute ? `${limit} (burst=${lim.burst})` : limit;
      return new LimitRefusal("rate_limit_exceeded", limit, `rate limit ${which} exceeded; retry after ${retry}s`, h, retry);
    }
    case "max":
      return new LimitRefusal("quota_exceeded", `max_requests=${lim.maxRequests}`, `request quota max_requests=${lim.maxRequests} of this key is used up`, h);
    case "over":
      return over ? new LimitRefusal("quota_exceeded", over.tripped, over.message, h) : null;
    case "usage": {
      const c = r.checks[v[1] - 1];
      const used = Number(v[3]);
      const cost = r.kn ? `; this call costs ${usd(r.s)} ${c.cur ?? "USD"}` : "";
      switch (v[2]) {
        case "td":
          return new LimitRefusal("quota_exceeded", `daily=${c.td}`, `${c.whose}token limit daily=${c.td} exceeded (used ${used} today)`, h);
        case "tm":
          return new LimitRefusal("quota_exceeded", `monthly=${c.tm}`, `${c.whose}token limit monthly=${c.tm} exceeded (used ${used} this month)`, h);
        case "bd":
          return new LimitRefusal("budget_exceeded", `daily=${usd(c.bd!)}`, `${c.whose}budget daily=${usd(c.bd!)} ${c.cur ?? "USD"} exceeded (spent ${usd(used)} ${c.cur ?? "USD"} today${cost})`, h);
        case "bm":
          return new LimitRefusal("budget_exceeded", `monthly=${usd(c.bm!)}`, `${c.whose}budget monthly=${usd(c.bm!)} ${c.cur ?? "USD"} exceeded (spent ${usd(used)} ${c.cur ?? "USD"} this month${cost})`, h);
        default:
          return new LimitRefusal("budget_exceeded", `total=${usd(c.bt!)}`, `${c.whose}budget total=${usd(c.bt!)} ${c.cur ?? "USD"} exceeded (spent ${usd(used)} ${c.cur ?? "USD"}${cost})`, h);
      }
    }
  }
}

/** The promise a request awaits before forwarding: rejects with the refusal, or with
 * SharedStoreUnavailable (503) for a limited key when the store is down. */
export function sharedDurable(store: SharedLimitStore, hold: SharedHold, lim: EffectiveLimits): Promise<void> {
  return store.admit(hold.req, hold.id).then(
    (v) => {
      hold.rate = sharedRate(v);
      const e = refusalOf(v, hold.req, lim, hold.rate, hold.over);
      if (e) throw e;
      if (hold.over) throw hold.over; // (a store without the "over" verdict)
      hold.held = hold.req.lim;
    },
    (e) => {
      if (hold.over) throw hold.over; // a client mistake stays a 402, without the rate headers
      if (!hold.req.lim) return; // no limit to protect: serve on (revocations still reach this replica's key cache)
      throw new SharedStoreUnavailable(`the shared limits store (Redis) is unreachable: ${String((e as Error)?.message ?? e)}`);
    },
  );
}

/** The admission of a request in shared mode (Limits.admit): nothing is counted in memory. */
export function admitShared(store: SharedLimitStore, k: KeyEntry, lim: EffectiveLimits, est: Estimate, ents: Entities, checks: Check[], day: string, month: string): Admission {
  const ids = [ents.own.id];
  if (ents.team) ids.push(ents.team.id);
  if (ents.org) ids.push(ents.org.id);
  const hold: SharedHold = { req: sharedRequest(k, lim, ids, checks, day, month, est.spend, est.tokens, est.known), id: store.newId(), held: false };
  if (lim.tokensPerRequest !== undefined && est.requestTokens > lim.tokensPerRequest) {
    const over = new LimitRefusal("quota_exceeded", `per_request_max=${lim.tokensPerRequest}`, `token limit per_request_max=${lim.tokensPerRequest} exceeded (prompt estimate plus max_tokens is ${est.requestTokens})`);
    // as in embedded mode, rate and max_requests refusals come first and the 402 carries the
    // rate headers: the store makes those checks and reports the rate state, taking nothing
    if (!hold.req.lim) throw over;
    hold.req.x = true;
    hold.over = over;
  }
  return { entities: [], counters: [], spend: est.spend, tokens: est.tokens, settled: false, shared: hold, durable: sharedDurable(store, hold, lim) };
}

export interface SharedView {
  sharedEntities(all: boolean): string[];
  periodNames(): [string, string];
  entity(id: string): EntityUsage;
}

/** The row, among the counters saved in the database, holding the mark of the copy they come
 * from (period "mark"): the incarnation of the Redis data (a number) as tokens, the number of its
 * last change as spend. It is written in the same transaction as the counters it describes. */
export const USAGE_MARK = ":shared-limits-copy";

/**
 * Each counters flush in shared mode: copy the shared counters of the entities this replica
 * knows into memory (key usage reports, monthly_budget policy conditions and budget alerts read
 * them), and on the lease holder also write every counter changed since the last copy, with the
 * mark of the instant they were read, to the database: a Redis that lost its data is rebuilt
 * from them (engines/cluster/shared-limits.ts), and each replica adds back its changes after it.
 */
export async function syncShared(store: SharedLimitStore, view: SharedView, write?: (c: PeriodCounter[]) => Promise<void>): Promise<void> {
  for (let i = 0; i < 2; i++) if (await syncOnce(store, view, write)) return;
}

async function syncOnce(store: SharedLimitStore, view: SharedView, write?: (c: PeriodCounter[]) => Promise<void>): Promise<boolean> {
  const ids = view.sharedEntities(!!write);
  const copy = !!write && !!store.copied;
  if (ids.length === 0 && !copy) return true;
  const [day, month] = view.periodNames();
  const rows = await store.read(ids, [day, month, "total"], copy);
  const changed: PeriodCounter[] = [];
  let mark: SharedUsage | undefined;
  for (const r of rows) {
    if (r.e === USAGE_MARK) {
      mark = r;
      continue;
    }
    const u = view.entity(r.e);
    const c = r.period === "total" ? u.total : r.period === day ? u.day : r.period === month ? u.month : undefined;
    if (!c) continue;
    const same = c.spend === r.s && c.tokens === r.t && c.requests === r.r;
    c.spend = r.s;
    c.tokens = r.t;
    c.requests = r.r;
    if (copy ? r.dirty : !same) changed.push(c);
  }
  if (!write) return true;
  if (!copy) {
    if (changed.length) await write(changed);
    return true;
  }
  if (!mark) return true; // not this replica's turn to copy
  if (changed.length) {
    // the mark goes in the same write (one transaction) as the counters it describes
    const m = new PeriodCounter(USAGE_MARK, "mark");
    m.spend = mark.s;
    m.tokens = Number(mark.period);
    try {
      await write([...changed, m]);
    } catch (e) {
      await store.copied!(mark, false).catch(() => undefined);
      throw e;
    }
  }
  return store.copied!(mark, true);
}

/** The shared-store strategy: every check and reservation in the shared store, nothing counted
 * in memory; each flush copies the shared counters in (and, on the lease holder, to the database). */
export function sharedAdmission(l: LimitsHost & SharedView, store: SharedLimitStore, write: () => ((c: PeriodCounter[]) => Promise<void>) | undefined): AdmissionStrategy {
  const keys = l.keys;
  return {
    admit(k, est, now) {
      const [day, month] = l.periodNames();
      const lim = l.limitsOf(k);
      const ents = l.entitiesOf(k);
      const conv = l.inKeyCurrency(k, est, now);
      const checks = est.unbudgeted ? [] : checksOf(k, ents, now, keys, (x) => l.limitsOf(x));
      const adm = admitShared(store, k, lim, conv.est, ents, checks, day, month);
      if (conv.rate !== 1) adm.rate = conv.rate;
      return adm;
    },
    settle(a, spend, tokens, served) {
      if (a.settled) return;
      a.settled = true;
      if (a.shared?.held) store.settle(a.shared.req, a.shared.id, Math.ceil(Math.round(spend) * (a.rate ?? 1)), tokens, served);
    },
    // the windows live in the shared store: a request's rate window comes with its verdict (SharedHold.rate)
    rate: () => undefined,
    flush: () => syncShared(store, l, write()),
  };
}
