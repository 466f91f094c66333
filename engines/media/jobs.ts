// Media jobs in the store (Prisma MediaJob): every image request and video job, so a job can be
// polled, cancelled and audited after the request that made it. Image requests in flight keep an
// AbortController in memory (cancel aborts the upstream call); a restart marks running image
// jobs failed with error "interrupted" (their upstream call died with the process).
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

export class MediaJobs {
  private inflight = new Map<string, AbortController>();

  constructor(private readonly prisma: PrismaClient) {}

  /** Start-up: image calls that were running died with the previous process. */
  async recover(): Promise<void> {
    await this.prisma.mediaJob.updateMany({ where: { kind: "image", status: "running" }, data: { status: "failed", error: "interrupted", updatedAt: new Date() } });
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
    return c;
  }

  untrack(id: string): void {
    this.inflight.delete(id);
  }

  /** Abort an image call in flight; false when it is not running here. */
  abort(id: string): boolean {
    const c = this.inflight.get(id);
    if (!c) return false;
    c.abort();
    this.inflight.delete(id);
    return true;
  }
}
