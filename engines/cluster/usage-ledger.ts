// A replica's own changes to the shared usage counters that PostgreSQL may not hold yet
// (engines/cluster/shared-limits.ts). Redis numbers each change in its incarnation (the id the
// rebuild that filled it gave it, seed.lua); the lease holder copies the counters to PostgreSQL
// with the incarnation and number they were read at (the copy's mark), then tells Redis
// (copied.lua, `durable`), and each replica forgets its changes up to there. When Redis loses its
// data, the rebuild adds the saved counters and records their mark (`base`); each replica then
// adds back, exactly once, every change of its own that the saved counters miss: those of
// another incarnation than the mark's, or numbered after it. So the rebuilt counters hold every
// settled request whichever replica settled it, and the reservations of requests still in flight
// are taken again. A replica killed in the same second as the data loss takes its changes with it.

/** A change to the counters of some entities in one day/month (and total). */
export interface Delta {
  ents: string[];
  day: string;
  month: string;
  s: number;
  t: number;
  r: number;
}

export interface Entry {
  /** the incarnation it is counted in ("" not counted yet: Redis was away or being rebuilt;
   * undefined: the script is on its way) */
  inc?: string;
  seq: number;
  d: Delta;
  /** its settle in limits.lua's call, for an entry not counted yet (it also releases the reservation) */
  settle?: SettleItem;
}

/** One request's settlement (limits.lua): its reservation `rs`/`rt`, what it used `s`/`t`. */
export interface SettleItem {
  id: string;
  ents: string[];
  /** the entities holding its reservation (those a check reads) */
  re: string[];
  day: string;
  month: string;
  rs: number;
  rt: number;
  s: number;
  t: number;
  served: boolean;
  /** limits.lua calls that carried this settle and whose answer never came back (timed out, or
   * the connection closed): [connection, call number]. Such a call may have run all the same
   * (Redis stalled, or answered into a dropped connection), so the settle is sent again with
   * them, and limits.lua applies it only if none of them ran: never counted twice. */
  tries?: Array<[string, number]>;
}

/** A request in flight holding a reservation. */
export interface Held {
  /** the entities holding the reservation */
  ents: string[];
  s: number;
  t: number;
  /** the incarnation the reservation is in */
  inc: string;
  /** local time after which it has lapsed anyway */
  until: number;
}

const MAX_ENTRIES = 200_000;

export class UsageLedger {
  entries: Entry[] = [];
  readonly held = new Map<string, Held>();
  private warned = false;

  constructor(private readonly log: (m: string) => void) {}

  add(e: Entry): void {
    if (this.entries.length >= MAX_ENTRIES) {
      // no copy to PostgreSQL for a long time (no lease holder?): the oldest go
      if (!this.warned) this.log("shared limits: no copy of the usage counters to the database lately; a Redis data loss now would lose settled spend");
      this.warned = true;
      this.entries.splice(0, MAX_ENTRIES / 10);
    }
    this.entries.push(e);
  }

  /** Forget the changes the database holds: counted in `inc` at or before `seq`. */
  prune(inc: string, seq: number): void {
    if (!this.entries.some((e) => e.inc === inc && e.seq <= seq)) return;
    this.entries = this.entries.filter((e) => !(e.inc === inc && e.seq <= seq));
    this.warned = false;
  }

  /** Changes the rebuild of `inc` from the saved counters (`base` = "incarnation:seq") misses:
   * counted in neither `inc` nor at/before the base; those the base holds are forgotten. */
  missing(inc: string, base: string): Entry[] {
    const i = base.lastIndexOf(":");
    const bInc = i >= 0 ? base.slice(0, i) : "";
    const bSeq = i >= 0 ? Number(base.slice(i + 1)) : -1;
    this.prune(bInc, bSeq);
    return this.entries.filter((e) => e.inc !== undefined && e.inc !== "" && e.inc !== inc);
  }

  /** Entries whose settle never reached Redis. */
  unsent(): Entry[] {
    return this.entries.filter((e) => e.inc === "");
  }

  /** reservations to take again in `inc`; lapsed ones are dropped */
  heldOutside(inc: string, now: number): Array<[string, Held]> {
    const out: Array<[string, Held]> = [];
    for (const [id, h] of this.held) {
      if (h.until <= now) this.held.delete(id);
      else if (h.inc !== inc) out.push([id, h]);
    }
    return out;
  }
}
