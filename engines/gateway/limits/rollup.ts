// Usage roll-up (docs/architecture.md "The gate"): the usage counters of every entity (a key, its team,
// its organization) for the current UTC day and month and all time, rolled over when the day
// changes, and what reads them: which entities a key's requests count toward, which team and
// organization budgets cover a key, settled spend and the usage report. Limits (../limits.ts)
// extends it with admission, settlement and persistence.
import { keyState, type KeyCache, type KeyEntry, usageIdsOf } from "../keys";
import { checksOf } from "./checks";
import { EntityUsage, PeriodCounter, effectiveLimits, type EffectiveLimits } from "./usage";

export class UsageRollup {
  protected usage = new Map<string, EntityUsage>();
  private effCache = new WeakMap<KeyEntry, EffectiveLimits>();
  protected dayP = "";
  protected monthP = "";
  private nextDayAt = 0;

  constructor(
    readonly keys: KeyCache,
    readonly now: () => number,
  ) {
    this.periods(now());
  }

  protected periods(now: number) {
    if (now < this.nextDayAt) return;
    const d = new Date(now);
    const iso = d.toISOString();
    this.dayP = "day:" + iso.slice(0, 10);
    this.monthP = "month:" + iso.slice(0, 7);
    this.nextDayAt = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  }

  /** The usage record of an entity, rolled over to the current day/month. */
  entity(id: string): EntityUsage {
    let u = this.usage.get(id);
    if (!u) {
      u = new EntityUsage(id, this.dayP, this.monthP);
      this.usage.set(id, u);
    } else {
      if (u.day.period !== this.dayP) u.day = new PeriodCounter(id, this.dayP);
      if (u.month.period !== this.monthP) u.month = new PeriodCounter(id, this.monthP);
    }
    return u;
  }

  limitsOf(k: KeyEntry): EffectiveLimits {
    let e = this.effCache.get(k);
    if (!e) {
      e = effectiveLimits(k);
      this.effCache.set(k, e);
    }
    return e;
  }

  /** Scale-out: entities whose shared counters this replica follows (every key's when `all`). */
  sharedEntities(all: boolean): string[] {
    if (all) for (const k of this.keys.all()) if (k.role === "key") this.entitiesOf(k);
    return [...this.usage.keys()];
  }

  periodNames(): [string, string] {
    this.periods(this.now());
    return [this.dayP, this.monthP];
  }

  /** Usage entities a key's requests count toward: key, team, organization. */
  entitiesOf(k: KeyEntry): { own: EntityUsage; team?: EntityUsage; org?: EntityUsage } {
    const ids = usageIdsOf(k);
    const own = this.entity(k.id);
    const team = ids.team !== undefined ? this.entity(ids.team) : undefined;
    const org = ids.org !== undefined ? this.entity(ids.org) : undefined;
    return { own, team, org };
  }

  /** Team and organization keys whose budgets cover this key's usage (the roll-up), active ones:
   * their budget-threshold alerts follow the spend of every member key. */
  budgetKeysAbove(k: KeyEntry, now?: number): KeyEntry[] {
    const s = k.spec;
    const out: KeyEntry[] = [];
    // the clock is read only for a key with a team or organization above it (most keys have none)
    if (s.key_type === "user" && s.team_id) {
      for (const t of this.keys.teamKeysOfMember(k)) if (this.limitsOf(t).budgeted && keyState(t, (now ??= this.now())) === "active") out.push(t);
    }
    if (s.organization_id && s.key_type !== "organization") {
      for (const o of this.keys.orgKeysOf(s.organization_id)) if (this.limitsOf(o).budgeted && keyState(o, (now ??= this.now())) === "active") out.push(o);
    }
    return out;
  }

  /** Does this key (or a team/org key above it) have a budget? Then only priced models are allowed. */
  needsPrice(k: KeyEntry, now = this.now()): boolean {
    if (this.limitsOf(k).budgeted) return true;
    const ents = this.entitiesOf(k);
    for (const c of checksOf(k, ents, now, this.keys, (x) => this.limitsOf(x))) if (c.lim.budgeted) return true;
    return false;
  }

  /** A key's month-to-date spend in micro-USD (policy conditions, alerts). */
  monthSpend(k: KeyEntry, now = this.now()): number {
    // roll the periods over first: the policy step runs before any admission, so on an idle
    // server (or for a key its policy keeps denying) nothing else would, and last month's spend
    // would keep a monthly_budget_over Deny in force in the new month
    this.periods(now);
    return this.entity(k.id).month.spend;
  }

  /** Settled spend (micro-USD) of the usage a key's own budgets apply to (team key: its team's). */
  spendOf(k: KeyEntry): { day: number; month: number; total: number } {
    this.periods(this.now());
    const ents = this.entitiesOf(k);
    const s = k.spec;
    const u = s.key_type === "team" && ents.team ? ents.team : s.key_type === "organization" && ents.org ? ents.org : ents.own;
    return { day: u.day.spend, month: u.month.spend, total: u.total.spend };
  }

  /** Usage of a key for the key routes (settled amounts), in the key's budget currency: `spend`
   * and `currency`, and `spend_usd` too when that currency is USD (the field keys had before). */
  report(id: string, currency = "USD") {
    // roll over first: before the first request of a new UTC day (or month) "today" is empty,
    // not the previous day's usage
    this.periods(this.now());
    const u = this.entity(id);
    const of = (c: { spend: number; tokens: number; requests: number }) => ({
      ...(currency === "USD" ? { spend_usd: c.spend / 1e6 } : {}),
      spend: c.spend / 1e6,
      currency,
      tokens: c.tokens,
      requests: c.requests,
    });
    return { today: of(u.day), month: of(u.month), total: of(u.total) };
  }
}
