-- The what-if replay reads a window in (timestamp, id) order (prisma/repos/audit-replay.ts): with
-- id in the index, SQLite no longer sorts ties through a temporary B-tree. Range reads by time
-- (usage, console) use it as they used the one on timestamp alone.
DROP INDEX IF EXISTS "AuditEntry_timestamp_idx";
CREATE INDEX "AuditEntry_timestamp_id_idx" ON "AuditEntry"("timestamp", "id");
