// The resource repository (ResourceRepo) takes the same steps on both databases; only the SQL
// differs (sqlite.ts, postgres.ts hand theirs in).
import { BATCH, chunks, type ResourceRepo, type ResourceRow } from "./types";

export interface ResourceSql {
  /** take the next store revision: insert `$1` when there is none, else add 1; returns `value` */
  revision: string;
  /** upsert of n Resource rows (12 values each, in ResourceRow's order) */
  upsert: (n: number) => string;
  /** status replacement of n (kind, name, status) triples */
  status: (n: number) => string;
}

interface RawTx {
  $executeRawUnsafe(sql: string, ...values: unknown[]): Promise<number>;
  $queryRawUnsafe<T = unknown>(sql: string, ...values: unknown[]): Promise<T>;
}
/** The part of either generated Prisma client used here (their types differ, the calls do not). */
export interface RawClient {
  $transaction<R>(f: (tx: RawTx) => Promise<R>, o: { timeout: number; maxWait: number }): Promise<R>;
}

export function resourceRepo(prisma: RawClient, sql: ResourceSql): ResourceRepo {
  return {
    // generous timeouts: a large apply is thousands of rows, and on a busy PostgreSQL the
    // default 5 s interactive-transaction limit can expire
    write: (first: number, make: (revision: number) => ResourceRow[]) =>
      prisma.$transaction(async (p) => {
        const got = await p.$queryRawUnsafe<Array<{ value: string }>>(sql.revision, String(first));
        const revision = Number(got[0].value);
        for (const c of chunks(make(revision), BATCH.resources)) {
          await p.$executeRawUnsafe(sql.upsert(c.length), ...c.flatMap((o) => [
            o.kind, o.name, o.uid, o.owner, o.labels, o.spec, o.generation, o.status, o.revision, o.deletedAt, o.createdAt, o.updatedAt,
          ]));
        }
        return revision;
      }, { timeout: 120_000, maxWait: 30_000 }),
    writeStatus: async (rows) => {
      await prisma.$transaction(async (p) => {
        for (const c of chunks(rows, BATCH.resources)) await p.$executeRawUnsafe(sql.status(c.length), ...c.flatMap((o) => [o.kind, o.name, o.status]));
      }, { timeout: 60_000, maxWait: 30_000 });
    },
  };
}
