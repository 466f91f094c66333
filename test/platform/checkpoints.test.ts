// WAL checkpoints run on a worker thread (prisma/checkpointer.ts): the server's connections
// have automatic checkpoints off, and the worker still moves committed pages into the main
// database file, so the WAL does not grow without bound. The audit writer holds its writes while a
// checkpoint runs, so checkpoints finish and the WAL starts over. Audit retention batches run on
// a thread of their own at idle priority, the same way, and it takes the checkpoints while it prunes.
import { describe, it, expect } from "vitest";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { AuditLog } from "../../engines/gateway/audit/log";
import path from "node:path";
import { openDb } from "../../prisma/client";
import { tempDir } from "../helpers/svc";
import { until } from "../helpers/http";

describe("background checkpoints", () => {
  it("turn automatic checkpoints off and copy the WAL into the database file", async () => {
    const db = await openDb(path.join(await tempDir("svc-ckpt-"), "svc.db"));
    try {
      expect(db.sqlite.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
      const before = statSync(db.file).size;
      db.sqlite.exec("CREATE TABLE filler (x TEXT)");
      const insert = db.sqlite.prepare("INSERT INTO filler VALUES (?)");
      db.sqlite.transaction(() => {
        for (let i = 0; i < 2000; i++) insert.run("x".repeat(500));
      })();
      expect(statSync(db.file + "-wal").size).toBeGreaterThan(1_000_000);
      // only a checkpoint writes pages into the main file; this connection will not do it
      await until(() => statSync(db.file).size > before + 1_000_000, 10_000);
    } finally {
      await db.close();
    }
  });

  it("under continuous audit writes the WAL starts over after checkpoints instead of growing", async () => {
    const db = await openDb(path.join(await tempDir("svc-ckpt-"), "svc.db"));
    // mxFrame, the WAL's last valid frame, from the wal-index header in the -shm file (offset 16)
    const frames = () => readFileSync(db.file + "-shm").readUInt32LE(16);
    const log = new AuditLog(db.prisma, db.repos.audit, { log: () => {}, writesPaused: () => db.writesPaused() });
    try {
      let seq = 0;
      let restarts = 0;
      let last = 0;
      // written until the WAL has started over twice (however long that takes on this machine)
      const t0 = Date.now();
      while (restarts < 2) {
        if (Date.now() - t0 > 45_000) throw new Error(`the WAL did not start over under continuous writes (${seq} entries, ${restarts} restarts)`);
        for (let i = 0; i < 64; i++) {
          seq++;
          log.record({ timestamp: new Date(), apiKeyId: "key_a", requestId: `req_${seq}`, action: "chat.completions", status: "success", latencyMs: 1, promptTokens: 1, completionTokens: 1, costMicros: 0n, metadata: { pad: "x".repeat(200) } });
        }
        await new Promise((r) => setTimeout(r, 5));
        const f = frames();
        if (f < last) restarts++;
        last = f;
      }
      await log.close();
      expect(restarts).toBe(2);
      expect(await db.prisma.auditEntry.count()).toBe(seq);
    } finally {
      await db.close();
    }
  });

  it("audit retention batches run on the thread while the audit writer holds its writes, and leave the roll-ups", async () => {
    const db = await openDb(path.join(await tempDir("svc-ckpt-"), "svc.db"));
    const log = new AuditLog(db.prisma, db.repos.audit, { log: () => {}, writesPaused: () => db.writesPaused() });
    try {
      expect(db.repos.retention.offThread).toBe(true);
      const old = new Date(Date.now() - 100 * 86_400_000);
      for (let i = 0; i < 300; i++) log.record({ timestamp: old, apiKeyId: "key_a", requestId: `old_${i}`, action: "chat.completions", status: "success", latencyMs: 1, promptTokens: 2, completionTokens: 3, costMicros: 5n, metadata: {} });
      await log.flush();
      const cutoff = new Date(Date.now() - 90 * 86_400_000);
      // a batch holds direct writes until the thread answers: an entry recorded meanwhile is
      // written after it, and never by this thread while the batch holds the write lock
      const batch = db.repos.retention.prune(cutoff, 200);
      expect(db.writesPaused()).toBeDefined();
      log.record({ timestamp: new Date(), apiKeyId: "key_a", requestId: "new", action: "chat.completions", status: "success", latencyMs: 1, promptTokens: 1, completionTokens: 1, costMicros: 0n, metadata: {} });
      const flushed = log.flush();
      expect(await batch).toBe(200);
      await flushed;
      expect(await db.repos.retention.prune(cutoff, 200)).toBe(100);
      expect(db.writesPaused()).toBeUndefined();
      expect(await db.prisma.auditEntry.findMany({ select: { requestId: true } })).toEqual([{ requestId: "new" }]);
      const daily = await db.prisma.usageDaily.findMany({ where: { keyId: "key_a" } });
      expect(daily.map((d) => ({ requests: d.requests, costMicros: Number(d.costMicros) }))).toEqual([{ requests: 300, costMicros: 1500 }]);
    } finally {
      await log.close();
      await db.close();
    }
  });

  it("while retention prunes, its thread (idle priority on Linux) takes the checkpoints; after, they come back", async () => {
    const db = await openDb(path.join(await tempDir("svc-ckpt-"), "svc.db"));
    const frames = () => readFileSync(db.file + "-shm").readUInt32LE(16);
    const log = new AuditLog(db.prisma, db.repos.audit, { log: () => {}, writesPaused: () => db.writesPaused() });
    const entry = (requestId: string, timestamp = new Date()) => ({ timestamp, apiKeyId: "key_a", requestId, action: "chat.completions", status: "success", latencyMs: 1, promptTokens: 1, completionTokens: 1, costMicros: 1n, metadata: { pad: "x".repeat(200) } });
    try {
      const old = new Date(Date.now() - 100 * 86_400_000);
      for (let i = 0; i < 6000; i++) log.record(entry(`old_${i}`, old));
      await log.flush();
      const cutoff = new Date(Date.now() - 90 * 86_400_000);
      let seq = 0;
      // new entries keep coming (as requests' do) while batches go, each followed by a rest
      const writeSome = () => {
        for (let i = 0; i < 32; i++) log.record(entry(`req_${++seq}`));
      };
      let pruned = 0;
      let restartsWhilePruning = 0;
      let last = frames();
      for (let n = -1; n !== 0; ) {
        n = await db.repos.retention.prune(cutoff, 50);
        pruned += n;
        writeSome();
        await new Promise((r) => setTimeout(r, 15));
        const f = frames();
        if (f < last) restartsWhilePruning++;
        last = f;
      }
      expect(pruned).toBe(6000);
      expect(restartsWhilePruning).toBeGreaterThan(0); // checkpoints went on while pruning
      await db.repos.retention.prune(cutoff, 50); // the last batch just ended: the next checkpoint is the retention thread's
      if (process.platform === "linux" && existsSync("/usr/bin/chrt")) {
        // field 41 of /proc/<pid>/task/<tid>/stat is the scheduling policy; 5 is SCHED_IDLE
        const policies = readdirSync("/proc/self/task").map((t) => {
          const st = readFileSync(`/proc/self/task/${t}/stat`, "utf8");
          return Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[38]);
        });
        expect(policies.filter((p) => p === 5)).toHaveLength(1);
      }
      // after pruning, checkpoints are the checkpoint thread's again: the WAL keeps starting over
      let restarts = 0;
      const t0 = Date.now();
      while (restarts < 2) {
        if (Date.now() - t0 > 45_000) throw new Error(`the WAL did not start over after pruning (${restarts} restarts)`);
        writeSome();
        await new Promise((r) => setTimeout(r, 5));
        const f = frames();
        if (f < last) restarts++;
        last = f;
      }
      await log.close();
      expect(await db.prisma.auditEntry.count()).toBe(seq);
      const daily = await db.prisma.usageDaily.findMany({ where: { keyId: "key_a" } });
      expect(daily.reduce((n, d) => n + d.requests, 0)).toBe(6000);
    } finally {
      await db.close();
    }
  });

  it("a short CLI command opens the store without the thread (automatic checkpoints stay on)", async () => {
    const db = await openDb(path.join(await tempDir("svc-ckpt-"), "svc.db"), { backgroundCheckpoints: false });
    try {
      expect(db.sqlite.pragma("wal_autocheckpoint", { simple: true })).toBe(1000);
      expect(db.repos.retention.offThread).toBe(false); // retention batches run on the caller's thread
    } finally {
      await db.close();
    }
  });
});
