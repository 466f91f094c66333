-- CreateTable
CREATE TABLE "Resource" (
    "kind" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "uid" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "labels" TEXT NOT NULL DEFAULT '{}',
    "spec" TEXT NOT NULL,
    "generation" INTEGER NOT NULL DEFAULT 1,
    "status" TEXT NOT NULL DEFAULT '{}',
    "revision" INTEGER NOT NULL,
    "deletedAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("kind", "name")
);

-- CreateTable
CREATE TABLE "Meta" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "value" TEXT NOT NULL
);

-- CreateTable
CREATE TABLE "UsageCounter" (
    "keyId" TEXT NOT NULL,
    "period" TEXT NOT NULL,
    "spendMicros" BIGINT NOT NULL DEFAULT 0,
    "tokens" BIGINT NOT NULL DEFAULT 0,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("keyId", "period")
);

-- CreateTable
CREATE TABLE "AuditEntry" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "timestamp" DATETIME NOT NULL,
    "apiKeyId" TEXT,
    "apiKeyName" TEXT,
    "organizationId" TEXT,
    "requestId" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "model" TEXT,
    "provider" TEXT,
    "status" TEXT NOT NULL,
    "errorCode" TEXT,
    "latencyMs" INTEGER NOT NULL,
    "promptTokens" INTEGER NOT NULL DEFAULT 0,
    "completionTokens" INTEGER NOT NULL DEFAULT 0,
    "totalTokens" INTEGER NOT NULL DEFAULT 0,
    "costMicros" BIGINT NOT NULL DEFAULT 0,
    "metadata" TEXT NOT NULL DEFAULT '{}',
    "ipAddress" TEXT,
    "userAgent" TEXT
);

-- CreateTable
CREATE TABLE "WebhookDelivery" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "keyId" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" DATETIME NOT NULL,
    "deliveredAt" DATETIME,
    "lastError" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "AlertMark" (
    "keyId" TEXT NOT NULL,
    "mark" TEXT NOT NULL,
    "firedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("keyId", "mark")
);

-- CreateIndex
CREATE UNIQUE INDEX "Resource_uid_key" ON "Resource"("uid");

-- CreateIndex
CREATE INDEX "Resource_owner_idx" ON "Resource"("owner");

-- CreateIndex
CREATE INDEX "AuditEntry_apiKeyId_timestamp_idx" ON "AuditEntry"("apiKeyId", "timestamp");

-- CreateIndex
CREATE INDEX "AuditEntry_organizationId_timestamp_idx" ON "AuditEntry"("organizationId", "timestamp");

-- CreateIndex
CREATE INDEX "WebhookDelivery_deliveredAt_nextAttemptAt_idx" ON "WebhookDelivery"("deliveredAt", "nextAttemptAt");

