// Which usage limits apply to a request (the roll-up): the key's own budgets/tokens against its
// own usage (a team key: its team's, an organization key: its organization's), plus every
// active team key above a user key against the team's usage and every active organization key
// against the organization's. usageOver names the first limit the committed amount (settled +
// reserved by requests in flight) has reached; for a call of known price, the first budget that
// price would take it over.
import { keyState, type KeyCache, type KeyEntry } from "../keys";
import { usd, type EffectiveLimits, type EntityUsage } from "./usage";

export interface Check {
  lim: EffectiveLimits;
  usage: EntityUsage;
  /** "" for the key's own limits, else `team key "name" ` */
  whose: string;
}

export interface Entities {
  own: EntityUsage;
  team?: EntityUsage;
  org?: EntityUsage;
}

export function checksOf(k: KeyEntry, ents: Entities, now: number, keys: KeyCache, limitsOf: (k: KeyEntry) => EffectiveLimits): Check[] {
  const s = k.spec;
  const lim = limitsOf(k);
  const ownUsage = s.key_type === "team" && ents.team ? ents.team : s.key_type === "organization" && ents.org ? ents.org : ents.own;
  const checks: Check[] = [];
  if (lim.hasUsageLimits) checks.push({ lim, usage: ownUsage, whose: "" });
  if (ents.team && s.key_type === "user") {
    for (const t of keys.teamKeysOfMember(k)) {
      const tl = limitsOf(t);
      if (tl.hasUsageLimits && keyState(t, now) === "active") checks.push({ lim: tl, usage: ents.team, whose: `team key "${t.name}" ` });
    }
  }
  if (ents.org && s.key_type !== "organization") {
    for (const o of keys.orgKeysOf(s.organization_id!)) {
      const ol = limitsOf(o);
      if (ol.hasUsageLimits && keyState(o, now) === "active") checks.push({ lim: ol, usage: ents.org, whose: `organization key "${o.name}" ` });
    }
  }
  return checks;
}

export interface Over {
  code: "quota_exceeded" | "budget_exceeded";
  limit: string;
  message: string;
}

export function usageOver(checks: Check[], known = 0): Over | null {
  for (const c of checks) {
    const u = c.usage;
    const l = c.lim;
    if (l.tokensDaily !== undefined && u.day.tokens + u.reservedTokens >= l.tokensDaily) {
      return { code: "quota_exceeded", limit: `daily=${l.tokensDaily}`, message: `${c.whose}token limit daily=${l.tokensDaily} exceeded (used ${u.day.tokens + u.reservedTokens} today)` };
    }
    if (l.tokensMonthly !== undefined && u.month.tokens + u.reservedTokens >= l.tokensMonthly) {
      return { code: "quota_exceeded", limit: `monthly=${l.tokensMonthly}`, message: `${c.whose}token limit monthly=${l.tokensMonthly} exceeded (used ${u.month.tokens + u.reservedTokens} this month)` };
    }
    const cost = known > 0 ? `; this call costs ${usd(known)} ${l.currency}` : "";
    if (l.budgetDaily !== undefined && over(u.day.spend + u.reservedSpend, known, l.budgetDaily)) {
      return { code: "budget_exceeded", limit: `daily=${usd(l.budgetDaily)}`, message: `${c.whose}budget daily=${usd(l.budgetDaily)} ${l.currency} exceeded (spent ${usd(u.day.spend)} ${l.currency} today${cost})` };
    }
    if (l.budgetMonthly !== undefined && over(u.month.spend + u.reservedSpend, known, l.budgetMonthly)) {
      return { code: "budget_exceeded", limit: `monthly=${usd(l.budgetMonthly)}`, message: `${c.whose}budget monthly=${usd(l.budgetMonthly)} ${l.currency} exceeded (spent ${usd(u.month.spend)} ${l.currency} this month${cost})` };
    }
    if (l.budgetTotal !== undefined && over(u.total.spend + u.reservedSpend, known, l.budgetTotal)) {
      return { code: "budget_exceeded", limit: `total=${usd(l.budgetTotal)}`, message: `${c.whose}budget total=${usd(l.budgetTotal)} ${l.currency} exceeded (spent ${usd(u.total.spend)} ${l.currency}${cost})` };
    }
  }
  return null;
}

/** An estimate is admitted while the committed amount is under the budget; a known price only
 * when it fits (committed + price within the budget). */
function over(committed: number, known: number, budget: number): boolean {
  return known > 0 ? committed + known > budget : committed >= budget;
}
