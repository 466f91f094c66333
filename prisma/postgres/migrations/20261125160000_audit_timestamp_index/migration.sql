-- GET /v1/usage and the console's charts read time ranges across every key.
CREATE INDEX "auditentry_timestamp_idx" ON "auditentry"("timestamp");
