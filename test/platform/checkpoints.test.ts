// WAL checkpoints run on a worker thread (prisma/checkpointer.ts): the server's connections
// have automatic checkpoints off, and the worker still moves committed pages into the main
// database file, so the WAL does not grow without bound.
import { describe, it, expect } from "vitest";
import { statSync } from "node:fs";
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

  it("a short CLI command opens the store without the thread (automatic checkpoints stay on)", async () => {
    const db = await openDb(path.join(await tempDir("svc-ckpt-"), "svc.db"), { backgroundCheckpoints: false });
    try {
      expect(db.sqlite.pragma("wal_autocheckpoint", { simple: true })).toBe(1000);
    } finally {
      await db.close();
    }
  });
});
