-- GET /v1/usage's roll-up of the audit log (engines/gateway/usage-report.ts): per UTC day, key,
-- organization, model, provider, action, failure status ('' = success) and latency bucket (exact
-- below 100 ms, then 10 ms / 100 ms / 1 s steps, as the report's percentiles). Triggers keep it:
-- every audit insert adds to its row and every delete (retention) subtracts, whatever wrote it.
CREATE TABLE "UsageRollup" (
    "day" TEXT NOT NULL,
    "apiKeyId" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "st" TEXT NOT NULL,
    "lat" INTEGER NOT NULL,
    "n" INTEGER NOT NULL,
    "promptTokens" BIGINT NOT NULL,
    "completionTokens" BIGINT NOT NULL,
    "costMicros" BIGINT NOT NULL,
    "apiKeyName" TEXT NOT NULL,

    PRIMARY KEY ("day", "apiKeyId", "organizationId", "model", "provider", "action", "st", "lat")
);

-- what the audit log already holds
INSERT INTO "UsageRollup" ("day", "apiKeyId", "organizationId", "model", "provider", "action", "st", "lat", "n", "promptTokens", "completionTokens", "costMicros", "apiKeyName")
SELECT substr(a."timestamp", 1, 10), coalesce(a."apiKeyId", ''), coalesce(a."organizationId", ''), coalesce(a."model", ''), coalesce(a."provider", ''), a."action", CASE WHEN a."status" = 'success' THEN '' ELSE a."status" END, CASE WHEN a."latencyMs" < 100 THEN a."latencyMs" WHEN a."latencyMs" < 1000 THEN a."latencyMs" - a."latencyMs" % 10 WHEN a."latencyMs" < 10000 THEN a."latencyMs" - a."latencyMs" % 100 ELSE a."latencyMs" - a."latencyMs" % 1000 END, COUNT(*), SUM(a."promptTokens"), SUM(a."completionTokens"), SUM(a."costMicros"), MAX(coalesce(a."apiKeyName", ''))
FROM "AuditEntry" a GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;

CREATE TRIGGER "AuditEntry_rollup_insert" AFTER INSERT ON "AuditEntry" BEGIN
  INSERT INTO "UsageRollup" ("day", "apiKeyId", "organizationId", "model", "provider", "action", "st", "lat", "n", "promptTokens", "completionTokens", "costMicros", "apiKeyName")
  VALUES (substr(NEW."timestamp", 1, 10), coalesce(NEW."apiKeyId", ''), coalesce(NEW."organizationId", ''), coalesce(NEW."model", ''), coalesce(NEW."provider", ''), NEW."action", CASE WHEN NEW."status" = 'success' THEN '' ELSE NEW."status" END, CASE WHEN NEW."latencyMs" < 100 THEN NEW."latencyMs" WHEN NEW."latencyMs" < 1000 THEN NEW."latencyMs" - NEW."latencyMs" % 10 WHEN NEW."latencyMs" < 10000 THEN NEW."latencyMs" - NEW."latencyMs" % 100 ELSE NEW."latencyMs" - NEW."latencyMs" % 1000 END, 1, NEW."promptTokens", NEW."completionTokens", NEW."costMicros", coalesce(NEW."apiKeyName", ''))
  ON CONFLICT DO UPDATE SET "n" = "n" + 1, "promptTokens" = "promptTokens" + excluded."promptTokens",
    "completionTokens" = "completionTokens" + excluded."completionTokens", "costMicros" = "costMicros" + excluded."costMicros",
    "apiKeyName" = max("apiKeyName", excluded."apiKeyName");
END;

CREATE TRIGGER "AuditEntry_rollup_delete" AFTER DELETE ON "AuditEntry" BEGIN
  UPDATE "UsageRollup" SET "n" = "n" - 1, "promptTokens" = "promptTokens" - OLD."promptTokens",
    "completionTokens" = "completionTokens" - OLD."completionTokens", "costMicros" = "costMicros" - OLD."costMicros"
  WHERE ("day", "apiKeyId", "organizationId", "model", "provider", "action", "st", "lat") = (substr(OLD."timestamp", 1, 10), coalesce(OLD."apiKeyId", ''), coalesce(OLD."organizationId", ''), coalesce(OLD."model", ''), coalesce(OLD."provider", ''), OLD."action", CASE WHEN OLD."status" = 'success' THEN '' ELSE OLD."status" END, CASE WHEN OLD."latencyMs" < 100 THEN OLD."latencyMs" WHEN OLD."latencyMs" < 1000 THEN OLD."latencyMs" - OLD."latencyMs" % 10 WHEN OLD."latencyMs" < 10000 THEN OLD."latencyMs" - OLD."latencyMs" % 100 ELSE OLD."latencyMs" - OLD."latencyMs" % 1000 END);
  DELETE FROM "UsageRollup" WHERE "n" <= 0 AND ("day", "apiKeyId", "organizationId", "model", "provider", "action", "st", "lat") = (substr(OLD."timestamp", 1, 10), coalesce(OLD."apiKeyId", ''), coalesce(OLD."organizationId", ''), coalesce(OLD."model", ''), coalesce(OLD."provider", ''), OLD."action", CASE WHEN OLD."status" = 'success' THEN '' ELSE OLD."status" END, CASE WHEN OLD."latencyMs" < 100 THEN OLD."latencyMs" WHEN OLD."latencyMs" < 1000 THEN OLD."latencyMs" - OLD."latencyMs" % 10 WHEN OLD."latencyMs" < 10000 THEN OLD."latencyMs" - OLD."latencyMs" % 100 ELSE OLD."latencyMs" - OLD."latencyMs" % 1000 END);
END;
