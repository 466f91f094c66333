// The object store: every manifest- or API-made object with spec, generation, owner, status
// and the store revision. All objects are held in memory (the request hot path never reads
// through Prisma); writes go to the database in one transaction, in multi-row statements of the
// store's resource repository (prisma/repos: SQLite by default, PostgreSQL's from OpenedDb.repos).
import { EventEmitter } from "node:events";
import { randomUUID } from "node:crypto";
import type { PrismaClient } from "./client";
import type { ResourceRepo } from "./repos/types";

export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export interface ObjectStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  [extra: string]: unknown;
}

export interface StoredObject {
  kind: string;
  name: string;
  uid: string;
  owner: string;
  labels: Record<string, string>;
  spec: any;
  generation: number;
  status: ObjectStatus;
  /** store revision of the last desired-state write to this object */
  revision: number;
  /** set when deletion was requested; the controller cleans up, then the row is purged */
  deleting: boolean;
  createdAt: string;
  updatedAt: string;
}

export type WriteOp =
  | { op: "upsert"; kind: string; name: string; owner: string; spec: unknown; labels?: Record<string, string> }
  | { op: "delete"; kind: string; name: string };

export interface Ref {
  kind: string;
  name: string;
}

export class StaleRevisionError extends Error {
  constructor(public expected: number, public actual: number) {
    super(`the store changed since the plan was made (plan revision ${expected}, store revision ${actual}); make a new plan`);
  }
}

const refKey = (kind: string, name: string) => `${kind}/${name}`;

/**
 * Events: "change" (refs: Ref[], revision) after each committed desired-state write;
 * "status" (ref) after a status write.
 */
export class ResourceStore extends EventEmitter {
  private objects = new Map<string, StoredObject>();
  private rev = 0;
  private statusQueue = new Map<string, StoredObject>();
  private statusFlush: Promise<void> | null = null;
  /** set by close(): nothing may start a database write after it (a transaction begun while the
   * client disconnects is left open, and holds the connection pool's end for ever) */
  private closed = false;
  /** writes and re-reads, one at a time: a re-read interleaved with a local write would drop the
   * write from memory (its snapshot predates it) or swallow another replica's change */
  private writing: Promise<unknown> = Promise.resolve();
  /** another process committed a revision this memory has not read (a write got a revision above
   * rev + 1): the next reload reads everything even when the revision looks current */
  private behind = false;
  /** scale-out (engines/cluster/bus.ts): awaited after each committed write, before it returns */
  afterCommit?: (refs: Ref[], revision: number) => Promise<void>;
  /** scale-out: told after status writes were committed (the other replicas re-read them) */
  afterStatus?: () => void;

  private constructor(private prisma: PrismaClient, private repo: ResourceRepo) {
    super();
    this.setMaxListeners(100);
  }

  /** `repo`: the store's resource repository (OpenedDb.repos.resources), required so that a
   * PostgreSQL store is never written with SQLite's statements. */
  static async open(prisma: PrismaClient, repo: ResourceRepo): Promise<ResourceStore> {
    const s = new ResourceStore(prisma, repo);
    await s.reload();
    return s;
  }

  /** Re-read everything from the database (another process may have written it). Returns true if the revision moved. */
  reload(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    const run = this.writing.then(() => this.doReload());
    this.writing = run.catch(() => undefined);
    return run;
  }

  private async doReload(): Promise<boolean> {
    const meta = await this.prisma.meta.findUnique({ where: { key: "revision" } });
    const rev = meta ? Number(meta.value) : 0;
    if (rev === this.rev && !this.behind && this.objects.size > 0) return false;
    const rows = await this.prisma.resource.findMany();
    const before = this.objects;
    this.objects = new Map(rows.map((r) => [refKey(r.kind, r.name), fromRow(r)]));
    const moved = rev !== this.rev || this.behind;
    this.rev = rev;
    this.behind = false;
    if (moved) {
      const refs = new Map<string, Ref>();
      for (const [k, o] of before) refs.set(k, { kind: o.kind, name: o.name });
      for (const [k, o] of this.objects) refs.set(k, { kind: o.kind, name: o.name });
      this.emit("change", [...refs.values()], rev);
    }
    return moved;
  }

  /** Desired-state revision: bumped by every create, spec/labels/owner change and delete. */
  get revision(): number {
    return this.rev;
  }

  get(kind: string, name: string): StoredObject | undefined {
    return this.objects.get(refKey(kind, name));
  }

  list(filter: { kind?: string; owner?: string; includeDeleting?: boolean } = {}): StoredObject[] {
    const out: StoredObject[] = [];
    for (const o of this.objects.values()) {
      if (filter.kind && o.kind !== filter.kind) continue;
      if (filter.owner && o.owner !== filter.owner) continue;
      if (o.deleting && !filter.includeDeleting) continue;
      out.push(o);
    }
    return out;
  }

  /**
   * Apply desired-state writes in one transaction. Unchanged upserts are skipped (no generation
   * bump). With expectedRevision, refuses (StaleRevisionError) when the store moved since.
   * Returns the new revision and the refs actually changed.
   */
  write(ops: WriteOp[], opts: { expectedRevision?: number } = {}): Promise<{ revision: number; changed: Ref[] }> {
    if (this.closed) return Promise.reject(new Error("the store is closed: svc is stopping; nothing was written"));
    const run = this.writing.then(() => this.doWrite(ops, opts));
    this.writing = run.catch(() => undefined);
    return run;
  }

  private async doWrite(ops: WriteOp[], opts: { expectedRevision?: number }) {
    if (opts.expectedRevision !== undefined && opts.expectedRevision !== this.rev) {
      throw new StaleRevisionError(opts.expectedRevision, this.rev);
    }
    const now = new Date().toISOString();
    const prev = this.rev;
    let next = prev + 1; // the revision the database hands out in the transaction (below)
    const rows: StoredObject[] = [];
    const deletes: StoredObject[] = [];
    for (const op of ops) {
      const cur = this.objects.get(refKey(op.kind, op.name));
      if (op.op === "delete") {
        if (cur && !cur.deleting) deletes.push({ ...cur, deleting: true, revision: next, updatedAt: now });
        continue;
      }
      const specJson = JSON.stringify(op.spec);
      const labels = op.labels ?? {};
      if (cur && !cur.deleting && JSON.stringify(cur.spec) === specJson && cur.owner === op.owner && JSON.stringify(cur.labels) === JSON.stringify(labels)) {
        continue;
      }
      const specChanged = !cur || cur.deleting || JSON.stringify(cur.spec) !== specJson;
      rows.push({
        kind: op.kind,
        name: op.name,
        uid: cur && !cur.deleting ? cur.uid : randomUUID(),
        owner: op.owner,
        labels,
        spec: JSON.parse(specJson),
        generation: cur && !cur.deleting ? cur.generation + (specChanged ? 1 : 0) : 1,
        status: cur && !cur.deleting ? cur.status : {},
        revision: next,
        deleting: false,
        createdAt: cur && !cur.deleting ? cur.createdAt : now,
        updatedAt: now,
      });
    }
    if (rows.length === 0 && deletes.length === 0) return { revision: this.rev, changed: [] };

    const all = [...rows, ...deletes];
    // The database hands out the revision inside the write transaction (atomically), so writers in
    // other processes (replicas, an offline CLI) never take the same one.
    next = await this.repo.write(next, (revision) => {
      if (opts.expectedRevision !== undefined && revision !== opts.expectedRevision + 1) throw new StaleRevisionError(opts.expectedRevision, revision - 1);
      for (const o of all) o.revision = revision;
      return all.map((o) => ({
        kind: o.kind, name: o.name, uid: o.uid, owner: o.owner, labels: JSON.stringify(o.labels), spec: JSON.stringify(o.spec),
        generation: o.generation, status: JSON.stringify(o.status), revision, deletedAt: o.deleting ? o.updatedAt : null,
        createdAt: o.createdAt, updatedAt: o.updatedAt,
      }));
    });
    for (const o of all) this.objects.set(refKey(o.kind, o.name), o);
    this.rev = next;
    if (next !== prev + 1) {
      // revisions in between were written elsewhere and are not in memory yet: read them now
      // (queued after this write), whatever the other writer's broadcast does
      this.behind = true;
      void this.reload().catch(() => undefined);
    }
    const changed = all.map((o) => ({ kind: o.kind, name: o.name }));
    this.emit("change", changed, next);
    if (this.afterCommit) await this.afterCommit(changed, next);
    return { revision: next, changed };
  }

  /** Write status (not desired state: no revision bump). Coalesced and flushed in batches. */
  setStatus(kind: string, name: string, status: ObjectStatus): void {
    const cur = this.objects.get(refKey(kind, name));
    if (!cur) return;
    cur.status = status;
    this.statusQueue.set(refKey(kind, name), cur);
    this.emit("status", { kind, name });
    // a failed timed flush keeps its batch queued (flushStatus) for the next one: never an unhandled rejection
    // after close() a status stays in memory only (the running reconciler writes it again)
    if (!this.statusFlush && !this.closed) this.statusFlush = new Promise((r) => setTimeout(r, 20)).then(() => this.flushStatus()).catch(() => undefined);
  }

  /** Persist queued status writes now. */
  async flushStatus(): Promise<void> {
    const batch = [...this.statusQueue.values()];
    this.statusQueue.clear();
    this.statusFlush = null;
    if (batch.length === 0) return;
    const requeue = () => {
      for (const o of batch) if (!this.statusQueue.has(refKey(o.kind, o.name))) this.statusQueue.set(refKey(o.kind, o.name), o);
    };
    await this.repo.writeStatus(batch.map((o) => ({ kind: o.kind, name: o.name, status: JSON.stringify(o.status) }))).catch((e) => {
      requeue();
      throw e;
    });
    this.afterStatus?.();
  }

  /** scale-out: status another replica (the reconciler) wrote, applied in memory only. */
  applyRemoteStatus(rows: Array<{ kind: string; name: string; status: string }>): void {
    for (const r of rows) {
      const cur = this.objects.get(refKey(r.kind, r.name));
      if (!cur || this.statusQueue.has(refKey(r.kind, r.name)) || JSON.stringify(cur.status) === r.status) continue;
      cur.status = JSON.parse(r.status);
      this.emit("status", { kind: r.kind, name: r.name });
    }
  }

  /** Remove an object whose deletion was requested, once its controller cleaned up. */
  async purge(kind: string, name: string): Promise<void> {
    const cur = this.objects.get(refKey(kind, name));
    if (!cur || !cur.deleting || this.closed) return;
    await this.prisma.resource.deleteMany({ where: { kind, name, deletedAt: { not: null } } });
    this.objects.delete(refKey(kind, name));
    this.statusQueue.delete(refKey(kind, name));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.writing;
    // a timed flush already running must finish before the database closes (slow on PostgreSQL)
    const timed = this.statusFlush;
    await this.flushStatus();
    await timed?.catch(() => undefined);
  }
}

function fromRow(r: any): StoredObject {
  return {
    kind: r.kind,
    name: r.name,
    uid: r.uid,
    owner: r.owner,
    labels: JSON.parse(r.labels),
    spec: JSON.parse(r.spec),
    generation: r.generation,
    status: JSON.parse(r.status),
    revision: r.revision,
    deleting: r.deletedAt != null,
    createdAt: new Date(r.createdAt).toISOString(),
    updatedAt: new Date(r.updatedAt).toISOString(),
  };
}
