// The shared limit store on Redis (engines/gateway/limits/shared.ts is the engine side). The
// admissions and settles of one event-loop turn go to Redis in one call of limits.lua, atomic:
// first the settles (release each reservation, add what the request used), then each admission
// in order (revocation, the rate bucket and windows, max_requests, budgets and token limits of the
// key, its team and its organization, and the reservation). The script reads each counter once a
// call and writes the sums, so under load Redis's work per request falls with the turn's size
// instead of following the number of requests. A settle leaves with the turn in which its answer
// was written, before any later admission of this replica; until then its reservation (never
// less than what the request used) stays counted, so the checks are stricter, never looser.
// A settle that cannot reach Redis is retried (kept in memory, bounded), so spend is not lost in a
// short outage; a reservation whose settle never arrives lapses after `reservationTtlMs`.
// Redis is a cache of the counters whose truth is in PostgreSQL: the lease holder copies them
// there each second with the mark of the instant it read them (snap.lua, copied.lua); a Redis
// without the `seeded` mark (new, restarted without persistence, FLUSHALL, failover to an empty
// replica) gets the saved counters added back (seed.lua) before any limited request is admitted,
// and every replica then adds back its own changes the saved counters miss (usage-ledger.ts).
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ReplyError, type Redis } from "ioredis";
import type { SharedLimitStore, SharedRate, SharedRequest, SharedUsage, SharedVerdict } from "../gateway/limits/shared";
import { USAGE_MARK } from "../gateway/limits/shared";
import { UsageLedger, type Delta, type Entry } from "./usage-ledger";
import { turnPayload } from "./turn-payload";

/** admissions or settles in one limits.lua call at most */
const TURN_BATCH = 256;

const here = path.dirname(fileURLToPath(import.meta.url));
const lua = (...files: string[]) => files.map((f) => readFileSync(path.join(here, f), "utf8")).join("\n");
/** limits.lua with the rate windows it calls in front (one script) */
export const turnScript = () => lua("windows.lua", "limits.lua");
const SCRIPTS = { svcTurn: turnScript(), svcSeed: lua("seed.lua"), svcApply: lua("apply.lua"), svcSnap: lua("snap.lua"), svcCopied: lua("copied.lua"), svcRun: lua("run.lua") };
const APPLY_BATCH = 500;
/** how long a copy to the database may take before another may start */
const COPY_TURN_MS = 30_000;

type WithScripts = Redis & {
  svcTurn(arg: string, conn: string, n: string): Promise<unknown[]>;
  svcSeed(arg: string): Promise<number>;
  svcApply(arg: string): Promise<unknown[]>;
  svcSnap(arg: string): Promise<unknown[]>;
  svcCopied(arg: string): Promise<number>;
  svcRun(arg: string): Promise<number>;
};

/** Counters saved in the database and the mark of the copy they come from ("incarnation:seq"). */
export interface SavedUsage {
  rows: SharedUsage[];
  mark?: string;
}

/** an admission waiting for its turn's call, and what the call said of it */
interface Admitted {
  v: unknown[];
  /** the incarnation and number of the change it made (limits.lua) */
  inc: string;
  seq: number;
}
interface Waiting {
  item: { req: SharedRequest; id: string };
  resolve(a: Admitted): void;
  reject(e: unknown): void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** the entities a request's reservation is held on (limits.lua): those a budget or token check reads */
const reserved = (req: SharedRequest) => req.checks.map((c) => c.e);

export class RedisLimits implements SharedLimitStore {
  private readonly r: WithScripts;
  private readonly tag = randomBytes(4).toString("hex");
  private seq = 0;
  private readonly ledger: UsageLedger;
  private timer: NodeJS.Timeout;
  private syncing?: Promise<void>;
  private again = false;
  private offline = false;
  /** this connection checked Redis is the process it was (run.lua); reset at each reconnect */
  private checked?: Promise<void>;
  /** that check is done: a turn's call can be written at once */
  private passed = false;
  /** this turn's admissions and settles, sent together (schedule) */
  private admits: Waiting[] = [];
  private settles: Entry[] = [];
  private queued = false;
  /** an id for each connection (stream) limits.lua calls went out on, and the calls' numbers */
  private readonly conns = new WeakMap<object, string>();
  private calls = 0;

  constructor(
    redis: Redis,
    private readonly opts: {
      prefix: string;
      reservationTtlMs: number;
      log: (m: string) => void;
      /** the counters saved in the database (the truth a Redis that lost its data is rebuilt from) */
      saved: () => Promise<SavedUsage>;
      /** how long limited requests wait after a rebuild for every replica to add back its changes */
      rebuildHoldMs?: number;
      /** how often this replica looks for a rebuild and sends settles Redis missed */
      pollMs?: number;
    },
  ) {
    for (const [name, source] of Object.entries(SCRIPTS)) redis.defineCommand(name, { numberOfKeys: 0, lua: source });
    this.r = redis as WithScripts;
    redis.on("ready", () => {
      this.checked = undefined;
      this.passed = false;
    });
    this.ledger = new UsageLedger(opts.log);
    this.timer = setInterval(() => void this.sync().catch(() => undefined), opts.pollMs ?? 250);
    this.timer.unref();
  }

  private get p() {
    return this.opts.prefix;
  }

  /** Before any counter is read or changed on a new connection: a Redis restarted with old data
   * is emptied so it is rebuilt (run.lua). */
  private check(): Promise<void> {
    if (this.checked) return this.checked;
    const c: Promise<void> = (this.checked = this.r.svcRun(JSON.stringify({ p: this.p })).then(
      (n) => {
        if (n === 1) this.opts.log("shared limits: Redis restarted with older data; its counters are rebuilt from the database");
        if (this.checked === c) this.passed = true;
      },
      (e) => {
        this.checked = undefined;
        throw e;
      },
    ));
    return c;
  }

  newId(): string {
    return `${this.tag}-${(++this.seq).toString(36)}`;
  }

  async admit(req: SharedRequest, id: string): Promise<SharedVerdict> {
    const item = { req, id };
    for (let tries = 0; ; tries++) {
      const { v, inc, seq } = await new Promise<Admitted>((resolve, reject) => {
        this.admits.push({ item, resolve, reject });
        this.schedule();
      });
      if (v[0] === "unseeded" || v[0] === "wait") {
        if (tries > 200) throw new Error("the shared limits store lost its counters again while they were being rebuilt");
        if (v[0] === "unseeded") await this.sync();
        else await Promise.all([this.sync(), sleep(Math.min(Number(v[1]) || 50, 100))]);
        continue;
      }
      if (v[0] !== "ok") return v as SharedVerdict;
      // a key without limits is admitted at once: no counter changed ({'ok', 0})
      if (v[1] !== 1) return ["ok"];
      this.ledger.add({ inc, seq, d: { ents: req.ents, day: req.day, month: req.month, s: 0, t: 0, r: 1 } });
      if ((req.s > 0 || req.t > 0) && req.checks.length) this.ledger.held.set(id, { ents: reserved(req), s: req.s, t: req.t, inc, until: Date.now() + this.opts.reservationTtlMs });
      const rate = v[2] as SharedRate | undefined;
      return rate ? ["ok", rate] : ["ok"];
    }
  }

  /** The turn's admissions and settles go out together once its I/O callbacks have run. */
  private schedule(): void {
    if (this.queued) return;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      const admits = this.admits;
      const settles = this.settles;
      this.admits = [];
      this.settles = [];
      for (let i = 0; i < Math.max(admits.length, settles.length); i += TURN_BATCH) void this.send(admits.slice(i, i + TURN_BATCH), settles.slice(i, i + TURN_BATCH));
    });
  }

  /** One limits.lua call; resolves with the incarnation it counted in ("": Redis is being
   * rebuilt, and the settles are sent again after; undefined: Redis unreachable, the same). */
  private async send(admits: Waiting[], settles: Entry[]): Promise<string | undefined> {
    for (const e of settles) e.inc = undefined;
    const arg = turnPayload(this.p, this.opts.reservationTtlMs, settles.map((e) => e.settle!), admits.map((w) => w.item));
    let v: unknown[];
    // The call is numbered on the connection it is written to (limits.lua records the last number
    // run on each connection). Its answer can fail to come back although it ran (Redis stalled past
    // the command timeout, or the connection dropped after it ran): its settles are then sent
    // again naming it, and limits.lua applies them only if it did not run, so a settle is never
    // counted twice. (Calls on one connection run in the order written, so "ran" is "a number at
    // or after it ran on its connection".)
    let sent: [string, number] | undefined;
    const call = () => {
      const stream = this.r.stream as object | undefined;
      let conn = stream ? this.conns.get(stream) : undefined;
      if (stream && !conn) this.conns.set(stream, (conn = `${this.tag}.${randomBytes(4).toString("hex")}`));
      sent = conn ? [conn, ++this.calls] : undefined;
      return sent ? this.r.svcTurn(arg, sent[0], String(sent[1])) : this.r.svcTurn(arg, "", "0");
    };
    try {
      // written now unless the connection is new (then after its check)
      v = await (this.passed ? call() : this.check().then(call));
    } catch (err) {
      // ran or not is unknown unless Redis answered with an error or the call was never written
      const doubtful = sent && !(err instanceof ReplyError) && !/isn't writeable/.test(String((err as Error)?.message));
      for (const e of settles) {
        e.inc = "";
        if (doubtful) (e.settle!.tries ??= []).push(sent!);
      }
      if (settles.length && !this.offline) this.opts.log("shared limits: Redis unreachable, settling later");
      if (settles.length) this.offline = true;
      for (const w of admits) w.reject(err);
      return undefined;
    }
    const inc = String(v[0]);
    const seq = Number(v[1]);
    for (const e of settles) {
      e.inc = inc;
      if (!inc) continue;
      e.seq = seq;
      e.settle = undefined;
    }
    if (settles.length && inc) this.offline = false;
    admits.forEach((w, i) => w.resolve({ v: v[i + 2] as unknown[], inc, seq }));
    return inc;
  }

  /** Rebuild the counters from the database unless Redis has them, and add back this replica's
   * changes a rebuild misses (one at a time here; seed.lua makes the rebuild happen once across
   * replicas). */
  reseed(): Promise<void> {
    return this.sync();
  }

  private sync(): Promise<void> {
    if (this.syncing) {
      this.again = true;
      return this.syncing;
    }
    this.syncing = (async () => {
      try {
        do {
          this.again = false;
          await this.syncOnce();
        } while (this.again);
      } finally {
        this.syncing = undefined;
      }
    })();
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    if (this.r.status !== "ready") return;
    await this.check();
    const unsent = this.ledger.unsent();
    for (let i = 0; i < unsent.length; i += TURN_BATCH) await this.sendSettles(unsent.slice(i, i + TURN_BATCH));
    for (let round = 0; round < 20; round++) {
      const [inc, base, durable] = await this.r.mget(`${this.p}seeded`, `${this.p}base`, `${this.p}durable`);
      if (!inc) {
        const saved = await this.opts.saved();
        const arg = { p: this.p, inc: randomBytes(6).readUIntBE(0, 6).toString(), base: saved.mark ?? "", hold: this.opts.rebuildHoldMs ?? 1000, rows: saved.rows };
        if (await this.r.svcSeed(JSON.stringify(arg))) this.opts.log(`shared limits: Redis had no counters; rebuilt ${saved.rows.length} from the database`);
        continue;
      }
      if (durable) this.ledger.prune(inc, Number(durable));
      const missing = this.ledger.missing(inc, base ?? "");
      const held = this.ledger.heldOutside(inc, Date.now());
      if (missing.length === 0 && held.length === 0) return;
      if (await this.addBack(inc, missing, held)) return;
    }
  }

  /** Add back changes and reservations into incarnation `inc`; false: it changed meanwhile. */
  private async addBack(inc: string, missing: Entry[], held: ReturnType<UsageLedger["heldOutside"]>): Promise<boolean> {
    const ttl = this.opts.reservationTtlMs;
    for (let i = 0; i < Math.max(missing.length, 1); i += APPLY_BATCH) {
      const part = missing.slice(i, i + APPLY_BATCH);
      const res = i === 0 ? held.map(([id, h]) => ({ id, ents: h.ents, s: h.s, t: h.t })) : [];
      if (part.length === 0 && res.length === 0) break;
      await this.check();
      const v = await this.r.svcApply(JSON.stringify({ p: this.p, inc, ttl, items: part.map((e) => e.d), res }));
      if (v[0] !== "ok") return false;
      part.forEach((e, j) => {
        e.inc = inc;
        e.seq = Number(v[j + 1]);
      });
      if (i === 0) for (const [, h] of held) h.inc = inc;
    }
    if (missing.length) this.opts.log(`shared limits: added back ${missing.length} counter changes of this replica to the rebuilt counters`);
    return true;
  }

  private async sendSettles(es: Entry[]): Promise<void> {
    if ((await this.send([], es)) === "") this.again = true;
  }

  /** The counters of `ents` now; with `copy` also every entity changed since the last copy to the
   * database (dirty), and the mark of this instant (the USAGE_MARK row). */
  async read(ents: string[], periods: string[], copy = false): Promise<SharedUsage[]> {
    const arg = JSON.stringify({ p: this.p, ents, periods, copy, token: this.tag, ttl: COPY_TURN_MS });
    await this.check();
    let v = await this.r.svcSnap(arg);
    if (v[0] === "unseeded") {
      await this.sync();
      v = await this.r.svcSnap(arg);
      if (v[0] === "unseeded") throw new Error("the shared limits store lost its counters again while they were being rebuilt");
    }
    const rows = JSON.parse(String(v[2])) as Array<[string, string, number, number, number, boolean]>;
    const out: SharedUsage[] = (Array.isArray(rows) ? rows : []).map(([e, period, s, t, r, dirty]) => ({ e, period, s, t, r, ...(dirty ? { dirty } : {}) }));
    // this replica's turn to copy (none while another copies or replicas add back their changes)
    if (Number(v[3]) === 1) out.push({ e: USAGE_MARK, period: String(v[0]), s: Number(v[1]), t: 0, r: 0 });
    return out;
  }

  /** The copy marked `mark` (read's USAGE_MARK row) is in the database (`ok`), or failed; false:
   * Redis lost its data meanwhile, and the copy must be made again from the rebuilt counters. */
  async copied(mark: SharedUsage, ok: boolean): Promise<boolean> {
    return (await this.r.svcCopied(JSON.stringify({ p: this.p, inc: mark.period, seq: mark.s, token: this.tag, ...(ok ? {} : { failed: true }) }))) === 1;
  }

  settle(req: SharedRequest, id: string, spend: number, tokens: number, served: boolean): void {
    this.ledger.held.delete(id);
    const s = Math.max(0, spend);
    const t = Math.max(0, tokens);
    const d: Delta = { ents: req.ents, day: req.day, month: req.month, s, t, r: served ? 0 : -1 };
    // (inc undefined: on its way, neither sent again nor added back meanwhile)
    const e: Entry = { seq: 0, d, settle: { id, ents: req.ents, re: reserved(req), day: req.day, month: req.month, rs: req.s, rt: req.t, s, t, served } };
    this.ledger.add(e);
    this.settles.push(e);
    this.schedule();
  }

  /** settles still waiting for Redis (tests, shutdown) */
  get unsettled(): number {
    return this.ledger.unsent().length;
  }

  /** counter changes of this replica not yet known to be in the database (tests) */
  get uncopied(): number {
    return this.ledger.entries.length;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.sync().catch(() => undefined);
  }
}
