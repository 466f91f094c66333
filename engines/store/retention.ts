// Audit retention (Server spec.retentionDays, default 90): audit entries older than that are
// deleted in batches, each batch one short transaction that also adds the rows' per-key/model/day
// totals to UsageDaily (prisma/repos/retention*.ts). On PostgreSQL a batch (BATCH rows) runs on
// the server, with a turn of the event loop between batches. A server on SQLite runs each batch
// of SQLITE_BATCH rows (about half a millisecond) on a background thread of its own at idle
// priority (prisma/retention-worker.mjs) while its direct writes wait (they are queued, requests
// are not), then rests as long as the batch took, so those writes get as much time. Small
// batches because whatever else runs on the machine slows requests while it runs, at any
// priority a little: a short batch slows the few requests beside it by a fraction of a
// millisecond (`npm run bench -- retention` measures requests with and without pruning in turns).
// Without that thread (or with an archive, which this thread writes) a batch holds every request
// while it runs, so it is followed by PACE times its duration of rest: pruning takes at most a
// fifth of the thread. Runs shortly after start and every 10 minutes; on PostgreSQL every
// replica may run it (batches skip each other's rows).
// On PostgreSQL the audit table is partitioned by UTC day: start and each run add the partitions
// of the AHEAD_DAYS days from today, then each run drops the days wholly past the cutoff as partitions
// (rolled up and archived the same way), leaving the cutoff's own day and the default partition
// to the batches.
import type { OpenedDb } from "../../prisma/client";
import { jsonlArchive } from "./retention-archive";

export const DEFAULT_RETENTION_DAYS = 90;
export const BATCH = 500;
const SQLITE_BATCH = 50;
const PACE = 4;
const EVERY_MS = 600_000;
const FIRST_MS = 5_000;
export const AHEAD_DAYS = 8;

export interface RetentionDeps {
  db: OpenedDb;
  /** Server spec.retentionDays, read at each run */
  days(): number | undefined;
  /** Server spec.retentionArchiveDir resolved to an absolute path, read at each run (unset: no archive) */
  archiveDir?(): string | undefined;
  warn(msg: string, extra?: Record<string, unknown>): void;
  info(msg: string, extra?: Record<string, unknown>): void;
}

export class Retention {
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;
  private closed = false;

  constructor(private readonly d: RetentionDeps) {}

  start(): void {
    // the partitions of the coming days exist before their rows arrive (else they wait in the default partition)
    this.adding = this.d.db.repos.retention.addPartitions?.(new Date(), AHEAD_DAYS).catch((e) => {
      if (!this.closed) this.d.warn("audit partitions not added; retried at the next retention run", { err: String(e?.message ?? e) });
      return false;
    });
    const tick = () => void this.run().catch((e) => this.d.warn("audit retention failed; retried later", { err: String(e?.message ?? e) }));
    const first = setTimeout(tick, FIRST_MS);
    first.unref();
    this.timer = setInterval(tick, EVERY_MS);
    this.timer.unref();
    this.first = first;
  }
  private first?: NodeJS.Timeout;
  private adding?: Promise<boolean>;

  /** Prune everything past the retention now (one run at a time); how many entries went. */
  run(now = Date.now()): Promise<number> {
    this.running ??= this.prune(now).finally(() => (this.running = undefined));
    return this.running;
  }

  private async prune(now: number): Promise<number> {
    const days = this.d.days() ?? DEFAULT_RETENTION_DAYS;
    const cutoff = new Date(now - days * 86_400_000);
    const dir = this.d.archiveDir?.();
    const archive = dir ? jsonlArchive(dir) : undefined;
    const repo = this.d.db.repos.retention;
    await repo.addPartitions?.(new Date(now), AHEAD_DAYS);
    let total = this.closed ? 0 : ((await repo.dropPartitions?.(cutoff, archive)) ?? 0);
    const sqlite = this.d.db.repos.dialect === "sqlite";
    while (!this.closed) {
      // batches that hold this thread: SQLite's, unless the background thread takes them (asked
      // each time: that thread may have stopped)
      const onThread = sqlite && !(repo.offThread && !archive);
      const size = sqlite ? SQLITE_BATCH : BATCH;
      // a background checkpoint holds direct writes (a batch sent to that thread waits its turn there,
      // and asking here would start the thread of a lazily opened store when there is nothing to prune)
      if (onThread) await this.d.db.writesPaused?.();
      const t0 = performance.now();
      const n = await repo.prune(cutoff, size, archive);
      total += n;
      if (n < size) break;
      const took = performance.now() - t0;
      await new Promise((r) => (onThread ? setTimeout(r, Math.max(1, PACE * took)) : sqlite ? setTimeout(r, Math.max(1, took)) : setImmediate(r)));
    }
    if (total) this.d.info("audit retention: pruned entries past retentionDays (their usage roll-ups kept)", { pruned: total, retentionDays: days, ...(dir ? { archivedTo: dir } : {}) });
    return total;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.first) clearTimeout(this.first);
    if (this.timer) clearInterval(this.timer);
    await this.adding;
    await this.running?.catch(() => undefined);
  }
}
