-- CreateTable
CREATE TABLE "AgentTask" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "agent" TEXT NOT NULL,
    "title" TEXT,
    "prompt" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "reason" TEXT,
    "idempotencyKey" TEXT,
    "ownerKeyId" TEXT,
    "iterations" INTEGER NOT NULL DEFAULT 0,
    "messages" TEXT NOT NULL DEFAULT '[]',
    "pending" TEXT,
    "result" TEXT,
    "cancelRequested" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" DATETIME NOT NULL,
    "updatedAt" DATETIME NOT NULL,
    "finishedAt" DATETIME
);

-- CreateTable
CREATE TABLE "AgentTaskStep" (
    "taskId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "at" DATETIME NOT NULL,

    PRIMARY KEY ("taskId", "seq")
);

-- CreateIndex
CREATE UNIQUE INDEX "AgentTask_idempotencyKey_key" ON "AgentTask"("idempotencyKey");

-- CreateIndex
CREATE INDEX "AgentTask_status_idx" ON "AgentTask"("status");

-- CreateIndex
CREATE INDEX "AgentTask_finishedAt_idx" ON "AgentTask"("finishedAt");

