// The optional archive of audit retention (Server spec.retentionArchiveDir): before a batch of
// pruned entries is deleted, its rows are appended to audit-<UTC day>.jsonl in that directory,
// one JSON object per line, and flushed to disk. A failed write keeps the batch in the store (the
// next run tries again); a crash between the write and the delete can leave a row twice in the
// files (at-least-once: deduplicate by "id").
import { mkdir, open } from "node:fs/promises";
import path from "node:path";
import type { ArchivedAuditRow, AuditArchive } from "../../prisma/repos/retention";

export function jsonlArchive(dir: string): AuditArchive {
  return async (rows: ArchivedAuditRow[]) => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const byDay = new Map<string, string[]>();
    for (const r of rows) {
      const day = String(r.timestamp).slice(0, 10);
      const lines = byDay.get(day) ?? [];
      lines.push(JSON.stringify(r));
      byDay.set(day, lines);
    }
    for (const [day, lines] of byDay) {
      const f = await open(path.join(dir, `audit-${day}.jsonl`), "a", 0o600);
      try {
        await f.write(lines.join("\n") + "\n");
        await f.datasync();
      } finally {
        await f.close();
      }
    }
  };
}
