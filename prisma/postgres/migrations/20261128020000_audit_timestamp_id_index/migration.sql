-- The what-if replay reads a window in (timestamp, id) order (prisma/repos/audit-replay.ts): with
-- id in the index, each day's partition is read in that order without a sort. Created on the
-- partitioned parent, so every partition (and each one retention adds) gets its own.
DROP INDEX IF EXISTS "auditentry_timestamp_idx";
CREATE INDEX "auditentry_timestamp_id_idx" ON "auditentry"("timestamp", "id");
