-- The roll-up of audit inserts moves from a per-row trigger to one statement per written batch
-- (prisma/repos/rollup-sqlite.ts, run in the same transaction as the batch's INSERT): the trigger
-- cost ~3 µs a row on the gateway's audit flush. Deletes (retention) keep their trigger.
DROP TRIGGER IF EXISTS "AuditEntry_rollup_insert";
