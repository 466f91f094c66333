-- CreateTable
CREATE TABLE "resource" (
    "kind" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "uid" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "labels" TEXT NOT NULL DEFAULT '{}',
    "spec" TEXT NOT NULL,
    "generation" INTEGER NOT NULL DEFAULT 1,
    "status" TEXT NOT NULL DEFAULT '{}',
    "revision" INTEGER NOT NULL,
    "deletedat" TIMESTAMP(3),
    "createdat" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedat" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "resource_pkey" PRIMARY KEY ("kind","name")
);

-- CreateTable
CREATE TABLE "meta" (
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "meta_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "usagecounter" (
    "keyid" TEXT NOT NULL,
    "period" TEXT NOT NULL,
    "spendmicros" BIGINT NOT NULL DEFAULT 0,
    "tokens" BIGINT NOT NULL DEFAULT 0,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "updatedat" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "usagecounter_pkey" PRIMARY KEY ("keyid","period")
);

-- CreateTable
CREATE TABLE "ratestate" (
    "keyid" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "updatedat" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ratestate_pkey" PRIMARY KEY ("keyid")
);

-- CreateTable
CREATE TABLE "reservation" (
    "id" INTEGER NOT NULL,
    "keyid" TEXT NOT NULL,
    "entities" TEXT NOT NULL,
    "day" TEXT NOT NULL,
    "month" TEXT NOT NULL,
    "spendmicros" BIGINT NOT NULL,
    "prompttokens" INTEGER NOT NULL,
    "tokens" BIGINT NOT NULL,
    "at" BIGINT NOT NULL,
    "requestid" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "model" TEXT,
    "keyname" TEXT,
    "organizationid" TEXT,
    "ipaddress" TEXT,

    CONSTRAINT "reservation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auditentry" (
    "id" TEXT NOT NULL,
    "timestamp" TIMESTAMP(3) NOT NULL,
    "apikeyid" TEXT,
    "apikeyname" TEXT,
    "organizationid" TEXT,
    "requestid" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "model" TEXT,
    "provider" TEXT,
    "status" TEXT NOT NULL,
    "errorcode" TEXT,
    "latencyms" INTEGER NOT NULL,
    "prompttokens" INTEGER NOT NULL DEFAULT 0,
    "completiontokens" INTEGER NOT NULL DEFAULT 0,
    "totaltokens" INTEGER NOT NULL DEFAULT 0,
    "costmicros" BIGINT NOT NULL DEFAULT 0,
    "metadata" TEXT NOT NULL DEFAULT '{}',
    "ipaddress" TEXT,
    "useragent" TEXT,

    CONSTRAINT "auditentry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhookdelivery" (
    "id" TEXT NOT NULL,
    "keyid" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextattemptat" TIMESTAMP(3) NOT NULL,
    "deliveredat" TIMESTAMP(3),
    "lasterror" TEXT,
    "createdat" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhookdelivery_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "alertmark" (
    "keyid" TEXT NOT NULL,
    "mark" TEXT NOT NULL,
    "firedat" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "alertmark_pkey" PRIMARY KEY ("keyid","mark")
);

-- CreateTable
CREATE TABLE "agenttask" (
    "id" TEXT NOT NULL,
    "agent" TEXT NOT NULL,
    "title" TEXT,
    "prompt" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "reason" TEXT,
    "idempotencykey" TEXT,
    "ownerkeyid" TEXT,
    "iterations" INTEGER NOT NULL DEFAULT 0,
    "messages" TEXT NOT NULL DEFAULT '[]',
    "pending" TEXT,
    "result" TEXT,
    "cancelrequested" BOOLEAN NOT NULL DEFAULT false,
    "createdat" TIMESTAMP(3) NOT NULL,
    "updatedat" TIMESTAMP(3) NOT NULL,
    "finishedat" TIMESTAMP(3),

    CONSTRAINT "agenttask_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agenttaskstep" (
    "taskid" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "agenttaskstep_pkey" PRIMARY KEY ("taskid","seq")
);

-- CreateIndex
CREATE UNIQUE INDEX "resource_uid_key" ON "resource"("uid");

-- CreateIndex
CREATE INDEX "resource_owner_idx" ON "resource"("owner");

-- CreateIndex
CREATE INDEX "auditentry_apikeyid_timestamp_idx" ON "auditentry"("apikeyid", "timestamp");

-- CreateIndex
CREATE INDEX "auditentry_organizationid_timestamp_idx" ON "auditentry"("organizationid", "timestamp");

-- CreateIndex
CREATE INDEX "webhookdelivery_deliveredat_nextattemptat_idx" ON "webhookdelivery"("deliveredat", "nextattemptat");

-- CreateIndex
CREATE UNIQUE INDEX "agenttask_idempotencykey_key" ON "agenttask"("idempotencykey");

-- CreateIndex
CREATE INDEX "agenttask_status_idx" ON "agenttask"("status");

-- CreateIndex
CREATE INDEX "agenttask_finishedat_idx" ON "agenttask"("finishedat");

