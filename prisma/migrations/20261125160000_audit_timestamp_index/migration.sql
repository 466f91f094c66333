-- GET /v1/usage and the console's charts read time ranges across every key.
CREATE INDEX "AuditEntry_timestamp_idx" ON "AuditEntry"("timestamp");
