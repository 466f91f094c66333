// Media jobs in the store (Prisma MediaJob): every image request and video job, so a job can be
// polled, cancelled and audited after the request that made it. Image requests in flight keep an
// AbortController in memory (cancel aborts the upstream call). Stopping aborts them and marks
// their jobs failed with error "interrupted"; so does the next start for jobs a crash left running.
//
// Replicas on one PostgreSQL share the jobs: a cancel that lands on another replica marks the
// row cancelled, and the replica running the call sees it within WATCH_MS and aborts; a start
// marks interrupted only running jobs older than any call can last (a live replica's are younger).
import { randomBytes } from "node:crypto";
import type { PrismaClient } from "../../prisma/client";

export interface MediaJobRow {
  id: string;
  kind: string;
  operation: string;
  provider: string;
  model: string | null;
  upstreamId: string | null;
  status: string;
  ownerKeyId: string | null;
  result: string | null;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** video jobs: the svc quote they were started under */
  quoteId: string | null;
  /** video jobs: the quoted price in micro-USD (what the key is charged) */
  priceMicros: bigint | null;
}

export const newJobId = (prefix: "img_" | "vid_") => prefix + randomBytes(12).toString("base64url");

/** How often a replica looks for its running image jobs cancelled through another replica. */
const WATCH_MS = 1000;

export class MediaJobs {
  private inflight = new Map<string, AbortController>();
  private watch: NodeJS.Timeout | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly opts: {
      /** other replicas share the store (PostgreSQL) */
      shared?: boolean;
      /** the longest an image call can run (its provider's timeout): older running jobs are dead */
      longestCallMs?: () => number;
    } = {},
  ) {}

  /** Start-up: image calls that were running died with the previous process (with shared
   * replicas, only those older than any call can last: the others may be running elsewhere). */
  async recover(): Promise<void> {
    const where = this.opts.shared ? { updatedAt: { lt: new Date(Date.now() - (this.opts.longestCallMs?.() ?? 0)) } } : {};
    await this.prisma.mediaJob.updateMany({ where: { kind: "image", status: "running", ...where }, data: { status: "failed", error: "interrupted", updatedAt: new Date() } });
  }

  /** Cancel a running image job: abort it here, or (shared store) mark it for the replica
   * running it. False when it is not running. */
  async cancel(id: string): Promise<boolean> {
    if (this.abort(id)) {
      await this.update(id, { status: "cancelled" });
      return true;
    }
    if (!this.opts.shared) return false;
    const { count } = await this.prisma.mediaJob.updateMany({ where: { id, kind: "image", status: "running" }, data: { status: "cancelled", updatedAt: new Date() } });
    return count > 0;
  }

  /** Stopping: calls still running are aborted and their jobs marked interrupted. */
  async close(): Promise<void> {
    this.stopWatch();
    const ids = [...this.inflight.keys()];
    for (const id of ids) this.abort(id);
    if (ids.length) await this.prisma.mediaJob.updateMany({ where: { id: { in: ids }, status: "running" }, data: { status: "failed", error: "interrupted", updatedAt: new Date() } });
  }

  async create(j: { id: string; kind: string; operation: string; provider: string; model?: string; upstreamId?: string; status: string; ownerKeyId: string | null; result?: unknown; quoteId?: string; priceMicros?: bigint }): Promise<MediaJobRow> {
    const now = new Date();
    return this.prisma.mediaJob.create({
      data: { ...j, model: j.model ?? null, upstreamId: j.upstreamId ?? null, result: j.result === undefined ? null : JSON.stringify(j.result), createdAt: now, updatedAt: now },
    });
  }

  async update(id: string, d: { status?: string; result?: unknown; error?: string | null; upstreamId?: string }): Promise<void> {
    await this.prisma.mediaJob.update({
      where: { id },
      data: { ...d, result: d.result === undefined ? undefined : JSON.stringify(d.result), updatedAt: new Date() },
    });
  }

  get(id: string): Promise<MediaJobRow | null> {
    return this.prisma.mediaJob.findUnique({ where: { id } });
  }

  track(id: string): AbortController {
    const c = new AbortController();
    this.inflight.set(id, c);
    if (this.opts.shared && !this.watch) {
      this.watch = setInterval(() => void this.abortCancelled().catch(() => undefined), WATCH_MS);
      this.watch.unref();
    }
    return c;
  }

  untrack(id: string): void {
    this.inflight.delete(id);
    if (this.inflight.size === 0) this.stopWatch();
  }

  /** Abort the calls running here whose jobs were cancelled through another replica. */
  private async abortCancelled(): Promise<void> {
    const ids = [...this.inflight.keys()];
    if (!ids.length) return;
    const rows = await this.prisma.mediaJob.findMany({ where: { id: { in: ids }, status: "cancelled" }, select: { id: true } });
    for (const r of rows) this.abort(r.id);
  }

  private stopWatch(): void {
    if (this.watch) clearInterval(this.watch);
    this.watch = undefined;
  }

  /** Abort an image call in flight; false when it is not running here. */
  private abort(id: string): boolean {
    const c = this.inflight.get(id);
    if (!c) return false;
    c.abort();
    this.inflight.delete(id);
    return true;
  }
}
