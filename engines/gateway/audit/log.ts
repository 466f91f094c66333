// The audit log: record() is O(1) on the request path (push to a queue); a timer flushes the
// queue in batches, one transaction per flush, through the store's audit repository
// (OpenedDb.repos.audit). On SQLite's direct handle (its `sync` side) a batch is written
// synchronously in small atomic chunks (~5 µs of CPU a row; through Prisma's JS engine ~55 µs);
// otherwise (PostgreSQL) the repository writes it in one transaction. close() flushes
// everything, so nothing recorded before SIGTERM handling is lost.
import { randomBytes } from "node:crypto";
import type { PrismaClient } from "../../../prisma/client";
import type { AuditRepo, SyncAudit } from "../../../prisma/repos/types";
import type { AuditEntry, Prisma } from "../../../prisma/generated/client";
import type { AuditRecord } from "../key-types";
import { decodeCursor, encodeCursor } from "./cursor";
import { toEntryJson, type AuditEntryJson } from "./entry-json";
import { auditId, auditRow, type Row } from "./rows";

export type { AuditEntryJson } from "./entry-json";

export interface AuditQuery {
  keyIds?: string[];
  organizationId?: string;
  since?: Date;
  until?: Date;
  /** exact action, or a dotted prefix: "chat" matches chat.completions and chat.stream */
  action?: string;
  /** "success", an error code, or "error"/"failed" for every non-success entry */
  status?: string;
  model?: string;
  /** request metadata members used for attribution (spec/gateway.md): exact string values */
  workflowId?: string;
  userId?: string;
  cursor?: string;
  limit?: number;
}

/** One page of entries, newest first (api/ shows it as a list envelope). */
export interface AuditPage {
  data: AuditEntryJson[];
  /** where the next (older) page starts; null on the last page */
  cursor: string | null;
  /** older entries follow */
  more: boolean;
}


export class AuditLog {
  /** rows as INSERT parameters in AUDIT_COLUMNS order (no per-row object to convert at flush time) */
  private queue: Row[] = [];
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private flushScheduled = false;
  private closed = false;
  private readonly flushMs: number;
  private readonly maxBatch: number;
  private readonly log: (m: string) => void;
  private seq = 0;
  /** rows of the batch being written */
  private inFlight = 0;
  private readonly idTail = randomBytes(4).toString("hex");
  private readonly writesPaused?: () => Promise<void> | undefined;

  /** `prisma` reads the log (query); `repo` writes it. */
  constructor(
    private readonly prisma: PrismaClient,
    private readonly repo: AuditRepo,
    opts: {
      flushMs?: number;
      maxBatch?: number;
      log?: (m: string) => void;
      /** a promise while direct writes should wait (a job on the store's background thread is running) */
      writesPaused?: () => Promise<void> | undefined;
    } = {},
  ) {
    this.writesPaused = opts.writesPaused;
    this.flushMs = opts.flushMs ?? 250;
    // A full batch is written at once rather than at the next tick of the timer: under load, rows
    // queued for a whole flush interval (250 ms) outlive V8's young generation, and every
    // young-generation GC copies and then promotes them (seen at 5k req/s in bench profiles).
    this.maxBatch = Math.max(1, Math.min(opts.maxBatch ?? DIRECT_CHUNK, 1500));
    this.log = opts.log ?? ((m) => console.error(m));
    this.timer = setInterval(() => this.flushQuietly(), this.flushMs);
    this.timer.unref(); // a pending flush must not keep a CLI process alive; close() flushes
  }

  /** Queue one entry; never throws, never awaits. */
  record(e: AuditRecord): void {
    const row = this.toRow(e);
    // shared stores write the row ahead on this replica's own file, before the answer leaves
    if (this.repo.journal) {
      try {
        this.repo.journal(row);
      } catch (err) {
        this.log(`audit: the write-ahead journal failed (the entry is still queued): ${String((err as Error)?.message ?? err)}`);
      }
    }
    this.queue.push(row);
    if (this.closed) {
      // Late writes (after close) still go out while the client is open.
      this.flushQuietly();
    } else if (this.queue.length >= this.maxBatch && !this.flushScheduled) {
      // A full batch should not wait for the timer; setImmediate keeps it off this request.
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        // whole batches only: the rest waits for the next batch or the timer, so a batch is
        // one transaction rather than a full one and a small remainder
        const run = this.chain.then(() => this.writeQueued(true));
        this.chain = run.catch(() => undefined);
      });
    }
  }

  /** Write everything queued so far. Flushes are serialized; a failed write is re-queued. */
  flush(): Promise<void> {
    const run = this.chain.then(() => this.writeQueued());
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Background flush: a failure is logged by writeQueued and retried on the next tick. */
  private flushQuietly(): void {
    this.flush().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    // A busy database at shutdown is usually transient: retry a few times before giving up.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.flush();
        // One more round picks up anything recorded while the last write was in flight.
        if (this.queue.length) await this.flush();
        return;
      } catch (e) {
        if (attempt >= 3) throw e;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  }

  /** Newest first. Flushes first so a caller reads its own writes. */
  async query(f: AuditQuery): Promise<AuditPage> {
    await this.flush().catch(() => undefined); // a failed write is logged and retried; still answer
    const limit = Math.max(1, Math.min(Math.trunc(f.limit ?? 100), 1000));
    const and: Prisma.AuditEntryWhereInput[] = [];
    if (f.keyIds) and.push({ apiKeyId: { in: f.keyIds } });
    if (f.organizationId !== undefined) and.push({ organizationId: f.organizationId });
    if (f.since) and.push({ timestamp: { gte: f.since } });
    if (f.until) and.push({ timestamp: { lte: f.until } });
    if (f.action) and.push({ OR: [{ action: f.action }, { action: { startsWith: `${f.action}.` } }] });
    if (f.status) {
      const s = f.status;
      and.push(s === "error" || s === "failed" || s === "failure" ? { status: { not: "success" } } : { status: s });
    }
    if (f.model) and.push({ model: f.model });
    // metadata is stored as JSON.stringify text: a top-level string member appears exactly so
    if (f.workflowId) and.push({ metadata: { contains: `"workflow_id":${JSON.stringify(f.workflowId)}` } });
    if (f.userId) and.push({ metadata: { contains: `"user_id":${JSON.stringify(f.userId)}` } });
    const before = (ts: Date, id: string): Prisma.AuditEntryWhereInput => ({ OR: [{ timestamp: { lt: ts } }, { timestamp: ts, id: { lt: id } }] });
    if (f.cursor) {
      const c = decodeCursor(f.cursor);
      and.push(before(new Date(c.ts), c.id));
    }
    // The metadata `contains` above is only a pre-filter: on SQLite it is a LIKE, which ignores
    // case and reads `%` and `_` in the value as wildcards (workflow_id=wf% matched every
    // workflow, u1 matched U1), so the log disagreed with the usage report's exact match. Each
    // candidate is checked exactly here, and further batches are read in the same keyset order
    // until a full page (plus one, for `more`) is found, so pages stay full and cursors exact.
    const exact = (row: AuditEntry) => metadataMatches(row.metadata, f);
    const rows: AuditEntry[] = [];
    for (let after: AuditEntry | undefined; ; ) {
      const batch = await this.prisma.auditEntry.findMany({
        where: { AND: after ? [...and, before(after.timestamp, after.id)] : and },
        orderBy: [{ timestamp: "desc" }, { id: "desc" }],
        take: limit + 1,
      });
      for (const r of batch) if (rows.length <= limit && exact(r)) rows.push(r);
      if (rows.length > limit || batch.length <= limit) break;
      after = batch[batch.length - 1];
    }
    const more = rows.length > limit;
    const page = more ? rows.slice(0, limit) : rows;
    const last = page[page.length - 1];
    return {
      data: page.map(toEntryJson),
      cursor: more && last ? encodeCursor({ ts: last.timestamp.getTime(), id: last.id }) : null,
      more,
    };
  }

  /** Write every queued row now, synchronously on the direct handle (no-op without one). The
   * limits flush calls it inside its own transaction, with the fold of the write-ahead journal,
   * so an answered request always has its audit row or its reservation on disk
   * (limits/wal.ts). A failure puts the rows back and throws (the caller rolls back). */
  drainSync(): void {
    const sync = this.direct();
    // rows taken by a batch that is still being written are neither queued nor on disk yet
    if (this.inFlight > 0) throw new Error("audit batch in progress");
    if (!sync || this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    try {
      for (let i = 0; i < batch.length; i += this.maxBatch) sync.insert(batch.slice(i, i + this.maxBatch));
    } catch (e) {
      this.queue = batch.concat(this.queue);
      throw e;
    }
  }

  /** Rows taken from the queue by a batch write that has not finished (drainSync waits for 0). */
  get writing(): boolean {
    return this.inFlight > 0;
  }

  /** Resolves when the flushes started so far are done. */
  idle(): Promise<void> {
    return this.chain;
  }

  /** Entries waiting to be written (for tests and shutdown logs). */
  get pending(): number {
    return this.queue.length;
  }

  private async writeQueued(wholeBatches = false): Promise<void> {
    const n = wholeBatches ? this.queue.length - (this.queue.length % this.maxBatch) : this.queue.length;
    if (n === 0) return;
    const batch = n === this.queue.length ? this.queue : this.queue.slice(0, n);
    this.queue = n === this.queue.length ? [] : this.queue.slice(n);
    this.inFlight = batch.length;
    try {
      await this.writeBatch(batch);
    } finally {
      this.inFlight = 0;
    }
  }

  /** SQLite's synchronous side, while its handle is open. */
  private direct(): SyncAudit | undefined {
    const sync = this.repo.sync;
    return sync?.handle.open ? sync : undefined;
  }

  private async writeBatch(batch: Row[]): Promise<void> {
    const sync = this.direct();
    if (sync) return this.writeDirect(sync, batch);
    try {
      await this.repo.insert(batch);
    } catch (e) {
      // The transaction rolled back: put the batch back in front so the next flush retries it.
      this.queue = batch.concat(this.queue);
      this.log(`audit: writing ${batch.length} entries failed, will retry: ${String((e as Error)?.message ?? e)}`);
      throw e;
    }
  }

  /** Synchronous writes block the event loop, so they go in small transactions with a yield
   * between them: no request waits behind more than one batch (maxBatch rows) of audit writing. */
  private async writeDirect(sync: SyncAudit, batch: Row[]): Promise<void> {
    for (let i = 0; i < batch.length; i += this.maxBatch) {
      // another job may take the store as this one ends: look again after each wait
      for (let paused = this.writesPaused?.(); paused; paused = this.writesPaused?.()) await paused;
      const rows = batch.slice(i, i + this.maxBatch);
      try {
        sync.insert(rows); // one statement: atomic
      } catch (e) {
        this.queue = batch.slice(i).concat(this.queue);
        this.log(`audit: writing ${batch.length - i} entries failed, will retry: ${String((e as Error)?.message ?? e)}`);
        throw e;
      }
      if (i + this.maxBatch < batch.length) await new Promise((r) => setImmediate(r));
    }
  }

  /** Ids sort by creation within this process, so equal timestamps keep recording order. */
  private nextId(ms: number): string {
    this.seq = (this.seq + 1) % 2_176_782_336; // 36^6
    return auditId(ms, this.seq, this.idTail);
  }

  private toRow(e: AuditRecord): Row {
    const ts = e.timestamp instanceof Date && !Number.isNaN(e.timestamp.getTime()) ? e.timestamp : new Date();
    return auditRow(e, this.nextId(ts.getTime()), ts);
  }
}

/** Rows per synchronous write on the direct handle by default (~13 µs each); a server passes
 * maxBatch: SERVER_BATCH. */
const DIRECT_CHUNK = 64;
/** The server's batch (engines/gateway/index.ts). A write is one transaction (the rows and their
 * roll-up), and each commit rewrites every page it touched: the apiKeyId and organizationId
 * indexes touch a page per key. bench/dev/gateway-writes.ts measured 64 rows at 34 µs of CPU and
 * 2.9 KB of WAL a row, 256 rows at 20 µs and 1.1 KB (~5 ms a write, against ~2 ms). */
export const SERVER_BATCH = 256;

/** The metadata filters, exactly: a top-level string member equal to the value. */
function metadataMatches(text: string, f: Pick<AuditQuery, "workflowId" | "userId">): boolean {
  if (!f.workflowId && !f.userId) return true;
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(text);
  } catch {
    return false;
  }
  if (!m || typeof m !== "object") return false;
  return (!f.workflowId || m.workflow_id === f.workflowId) && (!f.userId || m.user_id === f.userId);
}
