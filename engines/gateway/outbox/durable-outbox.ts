// The durable outbox that webhooks (webhooks.ts) and alert e-mails (email.ts) share. A channel
// enqueues by writing a delivery row (nothing is only in memory); a delivery loop hands due rows
// to the channel's send, and a row is marked delivered only once its receiver accepted it:
// at-least-once. Failures back off exponentially and are given up on after maxAttempts; rows
// still pending at close() are picked up by the next start() on the same database, so deliveries
// survive a restart. What differs per channel is only how a batch of rows is sent.
// The loop looks every second, but reads the table only when a row can be due: a pass notes when
// the earliest pending row comes due (its own retries included), this process's enqueues start a
// pass at once, and rows another process wrote (another replica on the same database) are looked for
// every rescanMs (10 s). An idle server so spends no query a second per channel: its idle CPU
// halved (README.md, "What it takes").
import { redactSecrets } from "../../secrets/redact";

/** nextAttemptAt of a row given up on: never due again (kept for inspection until pruned). */
export const FAILED_AT = new Date("9999-12-31T00:00:00.000Z");

/** Due rows read at once: bounds the memory of a pass over a large backlog. */
const BATCH = 50;

/** The columns the outbox reads and writes; WebhookDelivery and EmailDelivery both have them. */
export interface OutboxRow {
  id: string;
  keyId: string;
  event: string;
  attempts: number;
  nextAttemptAt: Date;
  deliveredAt: Date | null;
  lastError: string | null;
  createdAt: Date;
}

/** A row as the channel enqueues it: the rest starts at the columns' defaults. */
export type NewRow<Row extends OutboxRow> = Omit<Row, "attempts" | "deliveredAt" | "lastError" | "createdAt">;

/** What the outbox writes to a row: delivered, or one failed attempt (retry time or given up). */
type RowUpdate =
  | { deliveredAt: Date; attempts: { increment: number }; lastError: null }
  | { attempts: number; lastError: string; nextAttemptAt: Date };

/** The part of a Prisma delegate (prisma.webhookDelivery, prisma.emailDelivery) the outbox uses. */
export interface OutboxTable<Row extends OutboxRow> {
  create(args: { data: NewRow<Row> }): Promise<unknown>;
  findMany(args: {
    where: { deliveredAt: null; nextAttemptAt: { lte: Date } };
    orderBy: Array<{ nextAttemptAt: "asc" } | { createdAt: "asc" }>;
    take: number;
  }): Promise<Row[]>;
  findFirst(args: {
    where: { deliveredAt: null; nextAttemptAt: { lt: Date } };
    orderBy: { nextAttemptAt: "asc" };
    select: { nextAttemptAt: true };
  }): Promise<{ nextAttemptAt: Date } | null>;
  update(args: { where: { id: string }; data: RowUpdate }): Promise<unknown>;
  deleteMany(args: {
    where: { OR: Array<{ deliveredAt: { lt: Date } } | { deliveredAt: null; nextAttemptAt: Date; createdAt: { lt: Date } }> };
  }): Promise<unknown>;
}

/** How a channel's passes run. */
export interface OutboxChannel {
  /** log prefix ("webhook", "email") */
  name: string;
  /** rows sent at once within a batch */
  concurrency: number;
  /** true: read batches until the backlog is drained; false: one batch a pass */
  drain: boolean;
}

export interface OutboxOptions {
  log?: (m: string) => void;
  /** delivery loop interval (default 1000 ms) */
  pollMs?: number;
  /** how often the loop reads the table for rows another process wrote while none of its own is
   * due (default 10 x pollMs) */
  rescanMs?: number;
  /** attempts before a row is left failed (default 12) */
  maxAttempts?: number;
  /** injected clock for tests */
  now?: () => Date;
  /** delay after the n-th failed attempt (default 1 s doubling to 1 h, +0-20% jitter) */
  backoffMs?: (attempt: number) => number;
}

/** Sends one row; resolves true once it is marked delivered. */
export type SendRow<Row> = (row: Row) => Promise<boolean>;

export function defaultBackoffMs(attempt: number): number {
  const base = Math.min(3_600_000, 1000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 + Math.random() * 0.2)); // jitter spreads retries of many rows
}

export abstract class DurableOutbox<Row extends OutboxRow> {
  protected readonly log: (m: string) => void;
  protected readonly now: () => Date;
  private readonly pollMs: number;
  private readonly rescanMs: number;
  /** when the earliest pending row comes due as the last pass saw it (ms; Infinity: none pending,
   * 0: unknown), and when a pass last read the table */
  private nextDue = 0;
  private lastScan = 0;
  private readonly maxAttempts: number;
  private readonly backoffMs: (attempt: number) => number;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  protected closed = false;
  private readonly writes = new Set<Promise<unknown>>();
  private passChain: Promise<unknown> = Promise.resolve();
  private queuedPasses = 0;
  /** aborted by close() once the enqueues in flight are written: cancels the sends in flight,
   * whose rows stay pending, untouched */
  protected readonly abort = new AbortController();
  private lastPrune = 0;

  constructor(
    private readonly table: OutboxTable<Row>,
    private readonly channel: OutboxChannel,
    opts: OutboxOptions,
  ) {
    this.log = opts.log ?? ((m) => console.error(m));
    this.now = opts.now ?? (() => new Date());
    this.pollMs = opts.pollMs ?? 1000;
    this.rescanMs = opts.rescanMs ?? 10 * this.pollMs;
    this.maxAttempts = opts.maxAttempts ?? 12;
    this.backoffMs = opts.backoffMs ?? defaultBackoffMs;
  }

  /** Per batch of due rows: the send for each row, or undefined to leave the batch due for a
   * later pass (the channel records why: a row it fails, a log line). */
  protected abstract prepare(rows: Row[]): Promise<SendRow<Row> | undefined>;

  /** Closes the channel's connections once the last pass is over. */
  protected abstract release(): Promise<void>;

  /** Whether close() has stopped sending: by default once the sends in flight are aborted. */
  protected stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** Begin delivering, including rows left pending by a previous run. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.timer = setInterval(() => this.tick(), this.pollMs);
    this.timer.unref();
    this.kick();
  }

  /** Stop delivering; rows not delivered stay pending for the next start. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.writes]);
    this.abort.abort();
    await this.passChain.catch(() => undefined);
    await this.release();
  }

  /** Wait for enqueues in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.writes.size) await Promise.allSettled([...this.writes]);
  }

  /** One delivery pass over due rows; resolves to the number delivered. Passes never overlap. */
  deliverDue(): Promise<number> {
    const run = this.passChain.then(() => this.runPass());
    this.passChain = run.catch(() => 0);
    return run;
  }

  /** Write the row durably; the delivery loop is kicked once it is in. */
  protected enqueue(data: NewRow<Row>): void {
    const w = this.table
      .create({ data })
      .then(
        () => this.kick(),
        (e) => this.log(`${this.channel.name}: could not enqueue ${data.event} for key ${data.keyId}: ${String(e?.message ?? e)}`),
      )
      .finally(() => this.writes.delete(w));
    this.writes.add(w);
  }

  protected async delivered(row: Row): Promise<true> {
    await this.table.update({ where: { id: row.id }, data: { deliveredAt: this.now(), attempts: { increment: 1 }, lastError: null } });
    return true;
  }

  /** One failed attempt: retried after the backoff, or given up on after maxAttempts. */
  protected async failed(row: Row, error: string): Promise<false> {
    const attempts = row.attempts + 1;
    const giveUp = attempts >= this.maxAttempts;
    await this.table.update({
      where: { id: row.id },
      data: {
        attempts,
        lastError: giveUp ? `gave up after ${attempts} attempts: ${error}` : error,
        nextAttemptAt: giveUp ? FAILED_AT : new Date(this.now().getTime() + this.backoffMs(attempts)),
      },
    });
    // one line per failed attempt: what failed and what happens next (the reason names no secret:
    // a receiver's status, a timeout, or a reference that does not resolve)
    const reason = redactSecrets(error);
    if (giveUp) this.log(`${this.channel.name}: gave up on ${row.event} ${row.id} for key ${row.keyId} after ${attempts} attempts: ${reason}`);
    else this.log(`${this.channel.name}: ${row.event} ${row.id} for key ${row.keyId} failed (attempt ${attempts} of ${this.maxAttempts}; retrying later): ${reason}`);
    return false;
  }

  /** The loop's beat: a pass when a row may be due (see the header). */
  private tick(): void {
    const now = this.now().getTime();
    // now < lastScan: the wall clock was stepped back since the last pass; without this, no rescan
    // (for rows another replica wrote) would run until the clock caught up again
    if (now >= this.nextDue || now - this.lastScan >= this.rescanMs || now < this.lastScan) this.kick();
  }

  /** Background pass: coalesced, so a slow receiver does not pile up passes. */
  private kick(): void {
    if (!this.started || this.closed || this.queuedPasses > 1) return;
    this.queuedPasses++;
    this.deliverDue()
      .catch((e) => this.log(`${this.channel.name}: delivery pass failed: ${String(e?.message ?? e)}`))
      .finally(() => this.queuedPasses--);
  }

  private async runPass(): Promise<number> {
    // Rows enqueued just before this pass must be visible to it.
    await Promise.allSettled([...this.writes]);
    if (this.stopped()) return 0;
    this.lastScan = this.now().getTime();
    this.nextDue = 0; // unknown until this pass has looked (a failure leaves the next beat to look again)
    await this.prune();
    let delivered = 0;
    if ((await this.earliestDue()) > this.now().getTime()) return 0; // nothing due: one query, not a batch read
    for (;;) {
      const rows = await this.table.findMany({
        where: { deliveredAt: null, nextAttemptAt: { lte: this.now() } },
        orderBy: [{ nextAttemptAt: "asc" }, { createdAt: "asc" }],
        take: BATCH,
      });
      if (rows.length === 0) break;
      const send = await this.prepare(rows);
      if (!send) break;
      let next = 0;
      // A send that throws (the store refused the row's update) fails the pass, but only once the
      // other workers' sends are over: with Promise.all's early rejection they went on sending after
      // the pass had ended, while the next pass read and sent the same rows again (and close() did
      // not wait for them). No new row is taken after a failure.
      let failure: { error: unknown } | undefined;
      const worker = async () => {
        while (next < rows.length && !this.stopped() && !failure) {
          try {
            if (await send(rows[next++])) delivered++;
          } catch (error) {
            failure ??= { error };
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.channel.concurrency, rows.length) }, worker));
      if (failure) throw failure.error;
      if (!this.channel.drain || rows.length < BATCH || this.stopped()) break;
    }
    await this.earliestDue();
    return delivered;
  }

  /** When the earliest pending row (not given up on) comes due, noted for the loop's beat (ms;
   * Infinity when none is pending). */
  private async earliestDue(): Promise<number> {
    const first = await this.table.findFirst({ where: { deliveredAt: null, nextAttemptAt: { lt: FAILED_AT } }, orderBy: { nextAttemptAt: "asc" }, select: { nextAttemptAt: true } });
    return (this.nextDue = first ? first.nextAttemptAt.getTime() : Infinity);
  }

  /** Hourly housekeeping: delivered rows are kept 7 days, failed ones 30 (for inspection). */
  private async prune(): Promise<void> {
    const now = this.now().getTime();
    // (a clock stepped back since the last prune must not put housekeeping off until it catches up)
    if (now - this.lastPrune < 3_600_000 && now >= this.lastPrune) return;
    this.lastPrune = now;
    try {
      await this.table.deleteMany({
        where: {
          OR: [
            { deliveredAt: { lt: new Date(now - 7 * 86_400_000) } },
            { deliveredAt: null, nextAttemptAt: FAILED_AT, createdAt: { lt: new Date(now - 30 * 86_400_000) } },
          ],
        },
      });
    } catch (e: any) {
      this.log(`${this.channel.name}: pruning old deliveries failed: ${String(e?.message ?? e)}`);
    }
  }
}
