-- Memory (engines/memory). Hand-written: the FTS5 table is outside Prisma's model.
CREATE TABLE "MemorySignal" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "agent" TEXT NOT NULL,
    "conversationId" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "turnHash" TEXT NOT NULL,
    "userText" TEXT NOT NULL,
    "assistantText" TEXT NOT NULL,
    "sessionDate" TEXT,
    "project" TEXT,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "createdAt" BIGINT NOT NULL
);
CREATE INDEX "MemorySignal_agent_conversationId_status_idx" ON "MemorySignal"("agent", "conversationId", "status");
CREATE INDEX "MemorySignal_status_idx" ON "MemorySignal"("status");

CREATE TABLE "MemoryTranscript" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "agent" TEXT NOT NULL,
    "conversationId" TEXT NOT NULL,
    "turnHash" TEXT NOT NULL,
    "userText" TEXT NOT NULL,
    "assistantText" TEXT NOT NULL,
    "sessionDate" TEXT,
    "source" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL
);
CREATE UNIQUE INDEX "MemoryTranscript_agent_conversationId_turnHash_key" ON "MemoryTranscript"("agent", "conversationId", "turnHash");
CREATE INDEX "MemoryTranscript_agent_createdAt_idx" ON "MemoryTranscript"("agent", "createdAt");

CREATE TABLE "MemoryEpisode" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "agent" TEXT NOT NULL,
    "conversationId" TEXT NOT NULL,
    "summary" TEXT NOT NULL,
    "topics" TEXT NOT NULL DEFAULT '[]',
    "decisions" TEXT NOT NULL DEFAULT '[]',
    "actionItems" TEXT NOT NULL DEFAULT '[]',
    "entities" TEXT NOT NULL DEFAULT '[]',
    "salience" REAL NOT NULL,
    "sessionDate" TEXT,
    "project" TEXT,
    "mergedCount" INTEGER NOT NULL DEFAULT 1,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL
);
CREATE INDEX "MemoryEpisode_agent_createdAt_idx" ON "MemoryEpisode"("agent", "createdAt");

CREATE TABLE "MemoryFact" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "agent" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "norm" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'candidate',
    "support" INTEGER NOT NULL DEFAULT 1,
    "salience" REAL NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL
);
CREATE UNIQUE INDEX "MemoryFact_agent_norm_key" ON "MemoryFact"("agent", "norm");

CREATE TABLE "MemoryEntity" (
    "agent" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT,
    "description" TEXT,
    "mentions" INTEGER NOT NULL DEFAULT 1,
    "updatedAt" BIGINT NOT NULL,
    PRIMARY KEY ("agent", "name")
);

CREATE TABLE "MemoryIdentity" (
    "agent" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "updatedAt" BIGINT NOT NULL,
    PRIMARY KEY ("agent", "key")
);

CREATE TABLE "MemoryDeadLetter" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "agent" TEXT NOT NULL,
    "conversationId" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL,
    "signalIds" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "resolvedAt" BIGINT
);
CREATE INDEX "MemoryDeadLetter_agent_idx" ON "MemoryDeadLetter"("agent");

CREATE TABLE "MemoryRun" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "agent" TEXT,
    "type" TEXT NOT NULL,
    "trigger" TEXT NOT NULL,
    "startedAt" BIGINT NOT NULL,
    "finishedAt" BIGINT,
    "result" TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX "MemoryRun_agent_startedAt_idx" ON "MemoryRun"("agent", "startedAt");

CREATE TABLE "MemoryVector" (
    "kind" TEXT NOT NULL,
    "ref" INTEGER NOT NULL,
    "agent" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "vec" BLOB NOT NULL,
    PRIMARY KEY ("kind", "ref")
);
CREATE INDEX "MemoryVector_agent_idx" ON "MemoryVector"("agent");

-- Lexical index: one FTS5 table per agent (created on first use, named here), so BM25's corpus
-- statistics, removal (DROP TABLE) and rebuild are per agent and never touch another namespace.
CREATE TABLE "MemoryIndexTable" (
    "agent" TEXT NOT NULL PRIMARY KEY,
    "tableName" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL
);
CREATE UNIQUE INDEX "MemoryIndexTable_tableName_key" ON "MemoryIndexTable"("tableName");
