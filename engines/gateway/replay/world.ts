// One state of the gateway, built for a replay: the key cache, policy index, router, limits,
// alerts and gate the server runs, fed the way their controllers feed them (project), with the
// replay's simulated clock and nothing that writes: an in-memory limits repository, no audit
// sink, an outbox that only counts what it would send.
import type { StoredObject } from "../../../prisma/resource-store";
import type { LimitsRepo } from "../../../prisma/repos/types";
import type { PrismaClient } from "../../../prisma/client";
import type { AlertSettingsSpec } from "../../../schemas/kinds/alert-settings";
import type { ExchangeRate } from "../../../schemas/kinds/currency";
import type { KeyRef, WebhookEventName } from "../key-types";
import type { WebhookOutbox } from "../outbox/webhooks";
import { KeyCache } from "../keys";
import { PolicyIndex } from "../policy";
import { Limits } from "../limits";
import { Gate } from "../gate";
import { Alerts } from "../alerts/alerts";
import { settingsInForce } from "../alerts/settings";
import { ProviderRouter } from "../../providers/router";

/** A stored object as replay needs it (the store's, or a planned change laid over it). */
export type ReplayObject = Pick<StoredObject, "kind" | "name" | "owner" | "spec" | "createdAt">;

/** What a replay counts of the alerts the gate raised: per key, per event; and those that a
 * key's webhook would have received. */
export interface AlertCount {
  alerts: Map<string, Map<string, number>>;
  webhooks: Map<string, Map<string, number>>;
}

const bump = (m: Map<string, Map<string, number>>, key: string, ev: string) => {
  let e = m.get(key);
  if (!e) m.set(key, (e = new Map()));
  e.set(ev, (e.get(ev) ?? 0) + 1);
};

const NO_LIMITS_STORE: LimitsRepo = {
  save: async () => undefined,
  load: async () => ({ rates: [], counters: [] }),
};

export class ReplayWorld {
  /** the simulated clock: the time of the entry being replayed */
  t = 0;
  readonly keys = new KeyCache();
  readonly policies = new PolicyIndex();
  readonly router: ProviderRouter;
  readonly limits: Limits;
  readonly gate: Gate;
  readonly alerts: Alerts;
  /** replaced by a worker's count when the worker judged this state (parallel.ts) */
  counted: AlertCount = { alerts: new Map(), webhooks: new Map() };
  /** the balanced routes' random sequence (see drawsFor) */
  private seed = 0x2545f491;
  /** model calls judged so far: the ordinal of the next one (the same in both states and on a worker) */
  judged = 0;

  constructor(objects: Iterable<ReplayObject>) {
    const now = () => this.t;
    let rates: readonly ExchangeRate[] | undefined;
    const settings = new Map<string, Partial<AlertSettingsSpec>>();
    const servers: ReplayObject[] = [];
    // balanced routes draw with a fixed sequence, so two replays of one state agree; the
    // sequence restarts from each entry's ordinal (drawsFor), so the current and the proposed
    // state draw the same numbers for the same entry even when one of them refused earlier
    // entries before routing (a revoked or deleted key, an IP or scope refusal): a shared running
    // sequence would shift and report unrelated keys' calls as rerouted
    const random = () => ((this.seed = (Math.imul(this.seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    this.router = new ProviderRouter(() => undefined, { random, now });
    for (const o of objects) {
      if (o.kind === "ApiKey") this.keys.put(o as StoredObject);
      else if (o.kind === "AccessPolicy") this.policies.put(o.name, o.spec);
      else if (o.kind === "Provider") this.router.putProvider(o.name, o.spec);
      else if (o.kind === "Model") this.router.putModel(o.name, o.spec);
      else if (o.kind === "AlertSettings") settings.set(o.name, o.spec);
      else if (o.kind === "Server") servers.push(o);
    }
    // the first Server by name is in force (controllers/kinds/server.ts)
    servers.sort((a, b) => a.name.localeCompare(b.name));
    rates = servers[0]?.spec?.exchangeRates;
    const inForce = settingsInForce(settings);
    this.limits = new Limits(NO_LIMITS_STORE, this.keys, { now, flushMs: 0, exchangeRates: () => rates });
    const counted = this.counted;
    const outbox = {
      emit(key: KeyRef, event: WebhookEventName) {
        bump(counted.alerts, key.id, event);
        const wh = key.webhook;
        if (wh && wh.enabled !== false && wh.url && (wh.events ?? []).includes(event)) bump(counted.webhooks, key.id, event);
      },
    } as unknown as WebhookOutbox;
    // budget marks are kept in memory by Alerts itself; nothing is written
    const prisma = { alertMark: { create: async () => ({}) } } as unknown as PrismaClient;
    this.alerts = new Alerts({ outbox, prisma, settings: () => inForce, now: () => new Date(this.t), log: () => undefined });
    this.gate = new Gate({ keys: this.keys, policies: this.policies, limits: this.limits, alerts: this.alerts, allowUnauthenticatedLoopback: () => false, now });
  }

  /** Restart the draws for the model call with this ordinal (murmur3's finalizer of it): its
   * draw depends on the entry alone, not on how many draws the state made before it. */
  drawsFor(n: number): void {
    let h = (n ^ 0x2545f491) >>> 0;
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    this.seed = (h ^ (h >>> 16)) >>> 0;
  }

  async close(): Promise<void> {
    await this.alerts.idle();
    await this.limits.close();
  }
}
