// Persistence of the limits (docs/architecture.md "Controllers and the store"): usage counters (absolute values) and rate
// windows (snapshot JSON), saved through the store's limits repository (OpenedDb.repos.limits,
// prisma/repos) once a second and at close, and loaded at start.
// On SQLite's direct handle (the repository's `sync` side) one synchronous transaction also
// drains the queued audit rows and folds the write-ahead journal (limits/wal.ts), so the
// counters, the audit log and the write-ahead log always agree on disk.
// Without it (PostgreSQL) the repository saves asynchronously and there is no write-ahead log.
import type { LimitsLoaded, LimitsRepo, UsageRow } from "../../../prisma/repos/types";
import type { KeyRates } from "./key-rates";
import type { PeriodCounter } from "./usage";
import { WriteAhead } from "./wal";
import { recover } from "./wal-recover";

/** The parts of the audit log (audit/log.ts) a flush needs. */
export interface AuditDrain {
  readonly writing: boolean;
  idle(): Promise<void>;
  drainSync(): void;
}

/** A counter's saved values: requests in flight through the write-ahead log are left out (their
 * write-ahead reservations stand for them until they settle). */
export const usageRow = (c: PeriodCounter): UsageRow => ({
  keyId: c.entity,
  period: c.period,
  spendMicros: Math.max(0, Math.round(c.spend)),
  tokens: Math.max(0, c.tokens),
  requests: Math.max(0, c.requests - c.inflight),
});

export class LimitsPersistence {
  /** counters changed since the last flush */
  readonly dirty = new Set<PeriodCounter>();
  /** the write-ahead log, on SQLite's direct handle */
  readonly wal?: WriteAhead;

  constructor(
    private readonly repo: LimitsRepo,
    private readonly rates: KeyRates,
    private readonly opts: {
      now: () => number;
      audit?: () => AuditDrain | undefined;
      writesPaused?: () => Promise<void> | undefined;
    },
  ) {
    if (repo.sync) this.wal = new WriteAhead(repo.sync.handle);
  }

  /** Fold in what a crash left (write-ahead rows: their admissions go to the rate windows), then
   * load the rate windows and the given periods' counters. */
  async load(periods: string[]): Promise<{ recovered: number; state: LimitsLoaded }> {
    const sync = this.repo.sync;
    let recovered = 0;
    if (sync) {
      const r = recover(sync.handle);
      recovered = r.rows;
      this.wal?.start(r.generation);
      this.rates.replay = r.admissions;
    }
    const state = sync ? sync.load(periods) : await this.repo.load(periods);
    this.rates.loadSaved(state.rates);
    return { recovered, state };
  }

  settled(rowId: number): void {
    this.wal?.settle(rowId);
  }

  /** Save changed counters and rate windows; fold the write-ahead journal. */
  async write(): Promise<void> {
    if (this.dirty.size === 0 && !this.rates.changed() && !this.wal?.changed) return;
    // An audit batch being written holds rows that are neither queued nor on disk: wait for it,
    // then snapshot and commit without yielding (drainSync refuses if one started meanwhile).
    // A job on the store's background thread may start during either wait: look again until
    // neither holds.
    const audit = this.opts.audit?.();
    for (;;) {
      for (let paused = this.opts.writesPaused?.(); paused; paused = this.opts.writesPaused?.()) await paused;
      for (let i = 0; audit?.writing && i < 20; i++) await audit.idle().catch(() => undefined);
      if (!this.opts.writesPaused?.()) break;
    }
    // Snapshot synchronously: the values, the rate windows and the settled rows of one instant.
    const counters = [...this.dirty];
    this.dirty.clear();
    const { rates, gone, ids: rateIds } = this.rates.takeChanged(this.opts.now());
    const save = { counters: counters.map(usageRow), rates, gone };
    try {
      const sync = this.repo.sync;
      if (!sync) await this.repo.save(save);
      else if (sync.handle.open) {
        const wal = this.wal;
        sync.save(save, () => {
          wal?.fold();
          audit?.drainSync();
        });
        wal?.folded();
      } else throw new Error("database closed");
    } catch (e) {
      for (const r of counters) this.dirty.add(r); // retry at the next flush
      this.rates.markChanged(rateIds);
      throw e;
    }
  }

  /** Scale-out: the lease holder's copy of the shared counters (limits/shared.ts syncShared). */
  saveCounters(counters: PeriodCounter[]): Promise<void> {
    return this.repo.save({ counters: counters.map(usageRow), rates: [], gone: [] });
  }
}
