// The shared limit store on Redis (engines/gateway/limits/shared.ts is the engine side): one
// Lua script per request checks revocation, the rate bucket and windows, max_requests, budgets
// and token limits of the key, its team and its organization, and reserves, atomically
// (limits.lua); settle.lua releases the reservation and adds the actual usage. A settle that
// cannot reach Redis is retried each second (kept in memory, bounded), so spend is not lost in a
// short outage; a reservation whose settle never arrives lapses after `reservationTtlMs`.
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import type { SharedLimitStore, SharedRequest, SharedUsage, SharedVerdict } from "../gateway/limits/shared";

const here = path.dirname(fileURLToPath(import.meta.url));
const ADMIT = readFileSync(path.join(here, "limits.lua"), "utf8");
const SETTLE = readFileSync(path.join(here, "settle.lua"), "utf8");
const MAX_PENDING = 100_000;

type WithScripts = Redis & {
  svcAdmit(arg: string): Promise<unknown[]>;
  svcSettle(arg: string): Promise<number>;
};

export class RedisLimits implements SharedLimitStore {
  private readonly r: WithScripts;
  private readonly tag = randomBytes(4).toString("hex");
  private seq = 0;
  private pending: string[] = [];
  private timer: NodeJS.Timeout;

  constructor(
    redis: Redis,
    private readonly opts: { prefix: string; reservationTtlMs: number; log: (m: string) => void },
  ) {
    redis.defineCommand("svcAdmit", { numberOfKeys: 0, lua: ADMIT });
    redis.defineCommand("svcSettle", { numberOfKeys: 0, lua: SETTLE });
    this.r = redis as WithScripts;
    this.timer = setInterval(() => void this.retry(), 1000);
    this.timer.unref();
  }

  newId(): string {
    return `${this.tag}-${(++this.seq).toString(36)}`;
  }

  async admit(req: SharedRequest, id: string): Promise<SharedVerdict> {
    const arg = JSON.stringify({ ...req, p: this.opts.prefix, id, ttl: this.opts.reservationTtlMs });
    const v = await this.r.svcAdmit(arg);
    return v as SharedVerdict;
  }

  async read(ents: string[], periods: string[]): Promise<SharedUsage[]> {
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

  /** Put counters saved in the database back where Redis has none (a Redis that lost its data). */
  async seed(rows: SharedUsage[]): Promise<void> {
    const p = this.r.pipeline();
    for (const x of rows) {
      const k = `${this.opts.prefix}u:${x.e}:${x.period}`;
      p.hsetnx(k, "s", x.s).hsetnx(k, "t", x.t).hsetnx(k, "r", x.r);
    }
    if (rows.length) await p.exec();
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
