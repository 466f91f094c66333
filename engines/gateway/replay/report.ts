// The replay's report: each entry judged by the current state and by the proposed one, compared
// per key and rolled up per team and organization. A difference is a request refused under one
// state and not the other, a call that goes to another provider or model, a change of spend at
// the states' prices, or a change in the alerts and webhooks the gate raised.
import type { ReplayEntry } from "./entries";
import type { Outcome } from "./judge";

export interface Refusals {
  code: string;
  /** the limit that tripped (per_minute=2, daily=1.00), for a refusal by the limits */
  limit?: string;
  count: number;
  /** ISO time of the first entry it would have refused, and that entry's audit id */
  first: string;
  firstEntry: string;
  message: string;
}

export interface Spend {
  /** micro-USD: as the audit log recorded it, replayed at the current state's prices, at the proposed state's */
  recordedMicros: number;
  currentMicros: number;
  proposedMicros: number;
}

export interface KeyReport {
  key: string;
  name?: string;
  team?: string;
  organization?: string;
  requests: number;
  /** refused under the proposed state, admitted under the current one, by reason */
  newRefusals: Refusals[];
  /** admitted under the proposed state, refused under the current one */
  newlyAdmitted: number;
  /** "provider/model -> provider/model" and how many calls move */
  reroutes: Array<{ from: string; to: string; count: number }>;
  spend: Spend;
  /** alert events (key.limit_exceeded, key.budget_threshold, ...): count under each state */
  alerts: Record<string, { current: number; proposed: number }>;
  webhooks: Record<string, { current: number; proposed: number }>;
}

export interface Rollup {
  id: string;
  keys: number;
  requests: number;
  newRefusals: number;
  newlyAdmitted: number;
  rerouted: number;
  spend: Spend;
}

export interface Totals {
  requests: number;
  newRefusals: number;
  newlyAdmitted: number;
  rerouted: number;
  spend: Spend;
  alertsCurrent: number;
  alertsProposed: number;
  webhooksCurrent: number;
  webhooksProposed: number;
}

interface KeyAcc extends KeyReport {
  byReason: Map<string, Refusals>;
  byRoute: Map<string, { from: string; to: string; count: number }>;
}

const zeroSpend = (): Spend => ({ recordedMicros: 0, currentMicros: 0, proposedMicros: 0 });

export class ReportBuilder {
  private readonly keys = new Map<string, KeyAcc>();

  private acc(id: string): KeyAcc {
    let a = this.keys.get(id);
    if (!a) {
      a = { key: id, requests: 0, newRefusals: [], newlyAdmitted: 0, reroutes: [], spend: zeroSpend(), alerts: {}, webhooks: {}, byReason: new Map(), byRoute: new Map() };
      this.keys.set(id, a);
    }
    return a;
  }

  /** One entry's judgements: each state's outcome and spend (micro-USD). */
  add(e: ReplayEntry, cur: Outcome, curUsd: number, next: Outcome, nextUsd: number): void {
    const a = this.acc(e.keyId);
    a.requests++;
    a.spend.recordedMicros += e.costMicros;
    a.spend.currentMicros += curUsd;
    a.spend.proposedMicros += nextUsd;
    if (next.refused && !cur.refused) {
      const r = next.refused;
      const id = `${r.code}\u0000${r.limit ?? ""}`;
      const seen = a.byReason.get(id);
      if (seen) seen.count++;
      else a.byReason.set(id, { code: r.code, limit: r.limit, count: 1, first: new Date(e.ts).toISOString(), firstEntry: e.id, message: r.message });
    } else if (cur.refused && !next.refused) a.newlyAdmitted++;
    else if (!cur.refused && !next.refused && (cur.provider !== next.provider || cur.model !== next.model)) {
      const from = `${cur.provider}/${cur.model}`;
      const to = `${next.provider}/${next.model}`;
      const id = `${from}\u0000${to}`;
      const seen = a.byRoute.get(id);
      if (seen) seen.count++;
      else a.byRoute.set(id, { from, to, count: 1 });
    }
  }

  /** Alert and webhook counts of both states (ReplayWorld.counted). */
  alerts(field: "alerts" | "webhooks", cur: Map<string, Map<string, number>>, next: Map<string, Map<string, number>>): void {
    for (const [m, side] of [[cur, "current"], [next, "proposed"]] as const) {
      for (const [key, evs] of m) {
        const a = this.acc(key);
        for (const [ev, n] of evs) (a[field][ev] ??= { current: 0, proposed: 0 })[side] += n;
      }
    }
  }

  /** The per-key reports (keys named from `describe`), their roll-ups and totals. */
  build(describe: (id: string) => { name?: string; team?: string; organization?: string }): { keys: KeyReport[]; teams: Rollup[]; organizations: Rollup[]; totals: Totals } {
    const keys: KeyReport[] = [];
    const teams = new Map<string, Rollup>();
    const orgs = new Map<string, Rollup>();
    const totals: Totals = { requests: 0, newRefusals: 0, newlyAdmitted: 0, rerouted: 0, spend: zeroSpend(), alertsCurrent: 0, alertsProposed: 0, webhooksCurrent: 0, webhooksProposed: 0 };
    for (const a of [...this.keys.values()].sort((x, y) => x.key.localeCompare(y.key))) {
      const { byReason, byRoute, ...k } = a;
      Object.assign(k, describe(a.key));
      k.newRefusals = [...byReason.values()].sort((x, y) => x.first.localeCompare(y.first));
      k.reroutes = [...byRoute.values()];
      keys.push(k);
      const refused = sum(k.newRefusals.map((r) => r.count));
      const rerouted = sum(k.reroutes.map((r) => r.count));
      for (const r of [totals, k.team ? roll(teams, `${k.organization ?? ""}/${k.team}`) : null, k.organization ? roll(orgs, k.organization) : null]) {
        if (!r) continue;
        if ("keys" in r) r.keys++;
        r.requests += k.requests;
        r.newRefusals += refused;
        r.newlyAdmitted += k.newlyAdmitted;
        r.rerouted += rerouted;
        r.spend.recordedMicros += k.spend.recordedMicros;
        r.spend.currentMicros += k.spend.currentMicros;
        r.spend.proposedMicros += k.spend.proposedMicros;
      }
      for (const c of Object.values(k.alerts)) (totals.alertsCurrent += c.current), (totals.alertsProposed += c.proposed);
      for (const c of Object.values(k.webhooks)) (totals.webhooksCurrent += c.current), (totals.webhooksProposed += c.proposed);
    }
    return { keys, teams: [...teams.values()], organizations: [...orgs.values()], totals };
  }
}

function roll(m: Map<string, Rollup>, id: string): Rollup {
  let r = m.get(id);
  if (!r) m.set(id, (r = { id, keys: 0, requests: 0, newRefusals: 0, newlyAdmitted: 0, rerouted: 0, spend: zeroSpend() }));
  return r;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Differences a plan makes to the traffic: any at all (an unchanged plan has none). */
export function differences(t: Totals): number {
  return t.newRefusals + t.newlyAdmitted + t.rerouted + (t.spend.proposedMicros !== t.spend.currentMicros ? 1 : 0) + Math.abs(t.alertsProposed - t.alertsCurrent) + Math.abs(t.webhooksProposed - t.webhooksCurrent);
}

/** micro-USD as dollars to the cent ("$21.60", "-$0.72"); below a cent, to the micro-dollar. */
export function dollars(micros: number): string {
  const sign = micros < 0 ? "-" : "";
  const a = Math.abs(micros);
  return `${sign}$${a !== 0 && a < 10_000 ? (a / 1e6).toFixed(6) : (Math.round(a / 1e4) / 100).toFixed(2)}`;
}
