-- GET /v1/usage grouped by key (and day): the key/time index widened to cover every column the
-- report reads (an index-only scan); it replaces the narrower index.
DROP INDEX IF EXISTS "auditentry_apikeyid_timestamp_idx";
CREATE INDEX "AuditEntry_usage_idx" ON "auditentry"("apikeyid", "timestamp", "action", "status", "latencyms", "prompttokens", "completiontokens", "costmicros", "apikeyname");
