// The shapes shared by the limits (limits.ts) and their scale-out variant (limits/shared.ts), kept
// apart so neither imports the other's module for its types.
import type { KeyCache, KeyEntry } from "../keys";
import type { RateState } from "../../errors";
import type { LimitRefusal } from "./refusal";
import type { EffectiveLimits, EntityUsage, PeriodCounter } from "./usage";

/** One admitted request's hold on counters, released by settle(). */
export interface Admission {
  entities: EntityUsage[];
  /** the period counters this admission counted a request in (day, month, total per entity) */
  counters: PeriodCounter[];
  spend: number;
  tokens: number;
  settled: boolean;
  /** key-currency units per price-currency unit: settle() converts the actual spend with it */
  rate?: number;
  /** the reservation id, when the admission was written ahead */
  rowId?: number;
  /** shared mode: resolves once the shared store admitted and reserved; forward only after it
   * (it may refuse: a LimitRefusal, or 503 when the store is down) */
  durable?: Promise<void>;
  /** write-ahead: resolves once the reservation is in the journal (end of this event-loop turn).
   * The request may go upstream meanwhile; its answer waits for this (limits/wal.ts) */
  written?: Promise<void>;
  /** scale-out: the hold on the shared limit store (limits/shared.ts) */
  shared?: SharedHold;
}

export interface Estimate {
  /** reserved spend in micro-units of `currency` (the price currency; converted into the key's) */
  spend: number;
  /** ISO 4217 code of `spend` and of the settled spend (a Provider's price currency); default USD */
  currency?: string;
  /** reserved tokens (prompt estimate + output reserve) */
  tokens: number;
  /** prompt estimate + explicit max_tokens (for per_request_max) */
  requestTokens: number;
  /** prompt estimate (the audit row a crash recovery writes) */
  promptTokens?: number;
  /** model has a price (a budgeted key needs one) */
  priced: boolean;
  /** `spend` is the call's known price (media units, a quote), not an estimate: the call is
   * admitted only if that price fits under each budget (an estimate is admitted while the
   * committed amount is under the budget, and may end above it) */
  known?: boolean;
  /** counted as a request (rate limits, max_requests) but outside budgets and token limits
   * (count_tokens: it spends nothing) */
  unbudgeted?: boolean;
  model: string;
}

/** What a write-ahead row records of the request (for the audit row recovery may write). */
export interface RequestInfo {
  requestId: string;
  action: string;
  ip?: string;
}

/** One usage check (a key's own budgets/tokens, or a team/org key's above it) on an entity. */
export interface SharedCheck {
  e: string;
  whose: string;
  td?: number;
  tm?: number;
  bd?: number;
  bm?: number;
  bt?: number;
  /** the budgets' currency when not USD (refusal messages) */
  cur?: string;
}

export interface SharedRequest {
  /** key id */
  k: string;
  /** any limit applies (else only the revocation check is made, and a store outage lets it pass) */
  lim: boolean;
  pm?: number;
  burst?: number;
  ph?: number;
  pd?: number;
  mr?: number;
  ents: string[];
  day: string;
  month: string;
  /** reserved spend (micro-USD, integer) and tokens */
  s: number;
  t: number;
  checks: SharedCheck[];
  /** refuse after the checks that come first (per_request_max is over; the store reports the rate state) */
  x?: boolean;
  /** `s` is a known price: it must fit under each budget (Estimate.known) */
  kn?: boolean;
}

/** The rate window the x-ratelimit-* headers describe: limit, remaining, ms until it is full again. */
export type SharedRate = [number, number, number];

/** The store's answer: admitted or why not; for a key with a rate limit, its rate state comes last. */
export type SharedVerdict =
  | ["ok", SharedRate?]
  | ["revoked"]
  | ["rate", string, number, SharedRate?]
  | ["max", string, SharedRate?]
  | ["over", SharedRate?]
  | ["usage", number, string, string, SharedRate?];

/** Settled usage of one entity and period as the shared store holds it. */
export interface SharedUsage {
  e: string;
  period: string;
  s: number;
  t: number;
  r: number;
  /** changed since the last copy to the database (a read with `copy`) */
  dirty?: boolean;
}

export interface SharedLimitStore {
  /** settled usage of these entities in these periods (absent ones are left out); with `copy`
   * (the lease holder's copy to the database) also every entity changed since the last copy,
   * marked dirty, and the mark of the read (a row of entity USAGE_MARK, limits/shared.ts) */
  read(ents: string[], periods: string[], copy?: boolean): Promise<SharedUsage[]>;
  /** the copy of that read is in the database (or failed: `ok` false); false: it is stale, copy again */
  copied?(mark: SharedUsage, ok: boolean): Promise<boolean>;
  /** resolves with the verdict; rejects when the store cannot be reached */
  admit(r: SharedRequest, id: string): Promise<SharedVerdict>;
  /** release the reservation and count the actual usage (retried in the background) */
  settle(r: SharedRequest, id: string, spend: number, tokens: number, served: boolean): void;
  newId(): string;
}

export interface SharedHold {
  req: SharedRequest;
  id: string;
  /** the store admitted it: settle must release the reservation */
  held: boolean;
  /** the key's rate window, filled in when the store answers (before `durable` settles) */
  rate?: RateState;
  /** the per_request_max refusal the store is asked to confirm (req.x) */
  over?: LimitRefusal;
}

/** How a Limits instance admits and settles: in this process's memory (embedded, limits.ts) or in
 * a store shared by replicas (limits/shared.ts sharedAdmission). Chosen once, before the server
 * admits its first request; Limits delegates to it and never swaps methods. */
export interface AdmissionStrategy {
  admit(k: KeyEntry, est: Estimate, now: number, info?: RequestInfo): Admission;
  settle(a: Admission, spend: number, tokens: number, served: boolean): void;
  /** the key's rate window for the x-ratelimit-* headers (shared: it comes with each verdict) */
  rate(k: KeyEntry, now: number): RateState | undefined;
  /** persist (embedded) or copy the shared counters (shared); each second and at close */
  flush(): Promise<void>;
}

/** What the shared strategy reads on its Limits instance. */
export interface LimitsHost {
  readonly keys: KeyCache;
  readonly now: () => number;
  periodNames(): [string, string];
  limitsOf(k: KeyEntry): EffectiveLimits;
  entitiesOf(k: KeyEntry): { own: EntityUsage; team?: EntityUsage; org?: EntityUsage };
  /** the estimate in the key's budget currency, and the rate used (limits/currency.ts) */
  inKeyCurrency(k: KeyEntry, est: Estimate, now?: number): { est: Estimate; rate: number };
}
