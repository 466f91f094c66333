-- GET /v1/usage grouped by key (and day): the key/time index widened to cover every column the
-- report reads, so it scans this index in key order instead of the table; it replaces the
-- narrower index, so audit inserts still maintain one index for it.
DROP INDEX IF EXISTS "AuditEntry_apiKeyId_timestamp_idx";
CREATE INDEX "AuditEntry_usage_idx" ON "AuditEntry"("apiKeyId", "timestamp", "action", "status", "latencyMs", "promptTokens", "completionTokens", "costMicros", "apiKeyName");
