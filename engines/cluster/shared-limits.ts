// The shared limit store on Redis (engines/gateway/limits/shared.ts is the engine side): one
// Lua script per request checks revocation, the rate bucket and windows, max_requests, budgets
// and token limits of the key, its team and its organization, and reserves, atomically
// (limits.lua); settle.lua releases the reservation and adds the actual usage. A settle that
// cannot reach Redis is retried each second (kept in memory, bounded), so spend is not lost in a
// short outage; a reservation whose settle never arrives lapses after `reservationTtlMs`.
// Redis is a cache of the counters whose truth is in PostgreSQL: a Redis without the `seeded`
// mark (new, restarted without persistence, FLUSHALL, failover to an empty replica) gets the
// saved counters added back (seed.lua) before any limited request is admitted or any counter is
// copied back to the database.
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import type { SharedLimitStore, SharedRequest, SharedUsage, SharedVerdict } from "../gateway/limits/shared";

const here = path.dirname(fileURLToPath(import.meta.url));
const ADMIT = readFileSync(path.join(here, "limits.lua"), "utf8");
const SETTLE = readFileSync(path.join(here, "settle.lua"), "utf8");
const SEED = readFileSync(path.join(here, "seed.lua"), "utf8");
const MAX_PENDING = 100_000;

type WithScripts = Redis & {
  svcAdmit(arg: string): Promise<unknown[]>;
  svcSettle(arg: string): Promise<number>;
  svcSeed(arg: string): Promise<number>;
};

export class RedisLimits implements SharedLimitStore {
  private readonly r: WithScripts;
  private readonly tag = randomBytes(4).toString("hex");
  private seq = 0;
  private pending: string[] = [];
  private timer: NodeJS.Timeout;
  private seeding?: Promise<void>;

  constructor(
    redis: Redis,
    private readonly opts: {
      prefix: string;
      reservationTtlMs: number;
      log: (m: string) => void;
      /** the counters saved in the database (the truth a Redis that lost its data is rebuilt from) */
      saved: () => Promise<SharedUsage[]>;
    },
  ) {
    redis.defineCommand("svcAdmit", { numberOfKeys: 0, lua: ADMIT });
    redis.defineCommand("svcSettle", { numberOfKeys: 0, lua: SETTLE });
    redis.defineCommand("svcSeed", { numberOfKeys: 0, lua: SEED });
    this.r = redis as WithScripts;
    this.timer = setInterval(() => void this.retry(), 1000);
    this.timer.unref();
  }

  newId(): string {
    return `${this.tag}-${(++this.seq).toString(36)}`;
  }

  async admit(req: SharedRequest, id: string): Promise<SharedVerdict> {
    const arg = JSON.stringify({ ...req, p: this.opts.prefix, id, ttl: this.opts.reservationTtlMs });
    let v = await this.r.svcAdmit(arg);
    if (v[0] === "unseeded") {
      await this.reseed();
      v = await this.r.svcAdmit(arg);
      if (v[0] === "unseeded") throw new Error("the shared limits store lost its counters again while they were being rebuilt");
    }
    return v as SharedVerdict;
  }

  /** Rebuild the counters from the database unless Redis has them (one rebuild at a time here;
   * seed.lua makes it happen once across replicas). */
  reseed(): Promise<void> {
    this.seeding ??= (async () => {
      try {
        if (await this.r.exists(`${this.opts.prefix}seeded`)) return;
        const rows = await this.opts.saved();
        if (await this.r.svcSeed(JSON.stringify({ p: this.opts.prefix, rows }))) this.opts.log(`shared limits: Redis had no counters; rebuilt ${rows.length} from the database`);
      } finally {
        this.seeding = undefined;
      }
    })();
    return this.seeding;
  }

  async read(ents: string[], periods: string[]): Promise<SharedUsage[]> {
    // never copy back counters of a Redis that forgot them (they would overwrite the truth)
    await this.reseed();
    const p = this.r.pipeline();
    const order: Array<[string, string]> = [];
    for (const e of ents) for (const per of periods) {
      order.push([e, per]);
      p.hmget(`${this.opts.prefix}u:${e}:${per}`, "s", "t", "r");
    }
    const res = (await p.exec()) ?? [];
    const out: SharedUsage[] = [];
    res.forEach(([err, v], i) => {
      const f = v as Array<string | null> | null;
      if (err || !f || f.every((x) => x === null)) return;
      out.push({ e: order[i][0], period: order[i][1], s: Number(f[0] ?? 0), t: Number(f[1] ?? 0), r: Number(f[2] ?? 0) });
    });
    return out;
  }

  settle(req: SharedRequest, id: string, spend: number, tokens: number, served: boolean): void {
    const arg = JSON.stringify({ p: this.opts.prefix, id, ents: req.ents, day: req.day, month: req.month, rs: req.s, rt: req.t, s: Math.max(0, spend), t: Math.max(0, tokens), served });
    this.r.svcSettle(arg).catch(() => this.keep(arg));
  }

  private keep(arg: string) {
    if (this.pending.length >= MAX_PENDING) return;
    if (this.pending.length === 0) this.opts.log("shared limits: Redis unreachable, settling later");
    this.pending.push(arg);
  }

  private async retry() {
    if (this.pending.length === 0 || this.r.status !== "ready") return;
    const batch = this.pending;
    this.pending = [];
    for (const a of batch) await this.r.svcSettle(a).catch(() => this.keep(a));
  }

  /** settles still waiting for Redis (tests, shutdown) */
  get unsettled(): number {
    return this.pending.length;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.retry().catch(() => undefined);
  }
}
