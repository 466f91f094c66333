-- CreateTable
CREATE TABLE "memorysignal" (
    "id" SERIAL NOT NULL,
    "agent" TEXT NOT NULL,
    "conversationid" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "turnhash" TEXT NOT NULL,
    "usertext" TEXT NOT NULL,
    "assistanttext" TEXT NOT NULL,
    "sessiondate" TEXT,
    "project" TEXT,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "createdat" BIGINT NOT NULL,

    CONSTRAINT "memorysignal_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memorytranscript" (
    "id" SERIAL NOT NULL,
    "agent" TEXT NOT NULL,
    "conversationid" TEXT NOT NULL,
    "turnhash" TEXT NOT NULL,
    "usertext" TEXT NOT NULL,
    "assistanttext" TEXT NOT NULL,
    "sessiondate" TEXT,
    "source" TEXT NOT NULL,
    "createdat" BIGINT NOT NULL,

    CONSTRAINT "memorytranscript_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memoryepisode" (
    "id" SERIAL NOT NULL,
    "agent" TEXT NOT NULL,
    "conversationid" TEXT NOT NULL,
    "summary" TEXT NOT NULL,
    "topics" TEXT NOT NULL DEFAULT '[]',
    "decisions" TEXT NOT NULL DEFAULT '[]',
    "actionitems" TEXT NOT NULL DEFAULT '[]',
    "entities" TEXT NOT NULL DEFAULT '[]',
    "salience" DOUBLE PRECISION NOT NULL,
    "sessiondate" TEXT,
    "project" TEXT,
    "mergedcount" INTEGER NOT NULL DEFAULT 1,
    "createdat" BIGINT NOT NULL,
    "updatedat" BIGINT NOT NULL,

    CONSTRAINT "memoryepisode_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memoryfact" (
    "id" SERIAL NOT NULL,
    "agent" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "norm" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'candidate',
    "support" INTEGER NOT NULL DEFAULT 1,
    "salience" DOUBLE PRECISION NOT NULL,
    "createdat" BIGINT NOT NULL,
    "updatedat" BIGINT NOT NULL,

    CONSTRAINT "memoryfact_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memoryentity" (
    "agent" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT,
    "description" TEXT,
    "mentions" INTEGER NOT NULL DEFAULT 1,
    "updatedat" BIGINT NOT NULL,

    CONSTRAINT "memoryentity_pkey" PRIMARY KEY ("agent","name")
);

-- CreateTable
CREATE TABLE "memoryidentity" (
    "agent" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "updatedat" BIGINT NOT NULL,

    CONSTRAINT "memoryidentity_pkey" PRIMARY KEY ("agent","key")
);

-- CreateTable
CREATE TABLE "memorydeadletter" (
    "id" TEXT NOT NULL,
    "agent" TEXT NOT NULL,
    "conversationid" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL,
    "signalids" TEXT NOT NULL,
    "createdat" BIGINT NOT NULL,
    "resolvedat" BIGINT,

    CONSTRAINT "memorydeadletter_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memoryrun" (
    "id" TEXT NOT NULL,
    "agent" TEXT,
    "type" TEXT NOT NULL,
    "trigger" TEXT NOT NULL,
    "startedat" BIGINT NOT NULL,
    "finishedat" BIGINT,
    "result" TEXT NOT NULL DEFAULT '{}',

    CONSTRAINT "memoryrun_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memoryindextable" (
    "agent" TEXT NOT NULL,
    "tablename" TEXT NOT NULL,
    "createdat" BIGINT NOT NULL,

    CONSTRAINT "memoryindextable_pkey" PRIMARY KEY ("agent")
);

-- CreateTable
CREATE TABLE "memoryvector" (
    "kind" TEXT NOT NULL,
    "ref" INTEGER NOT NULL,
    "agent" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "vec" BYTEA NOT NULL,

    CONSTRAINT "memoryvector_pkey" PRIMARY KEY ("kind","ref")
);

-- CreateIndex
CREATE INDEX "memorysignal_agent_conversationid_status_idx" ON "memorysignal"("agent", "conversationid", "status");

-- CreateIndex
CREATE INDEX "memorysignal_status_idx" ON "memorysignal"("status");

-- CreateIndex
CREATE INDEX "memorytranscript_agent_createdat_idx" ON "memorytranscript"("agent", "createdat");

-- CreateIndex
CREATE UNIQUE INDEX "memorytranscript_agent_conversationid_turnhash_key" ON "memorytranscript"("agent", "conversationid", "turnhash");

-- CreateIndex
CREATE INDEX "memoryepisode_agent_createdat_idx" ON "memoryepisode"("agent", "createdat");

-- CreateIndex
CREATE UNIQUE INDEX "memoryfact_agent_norm_key" ON "memoryfact"("agent", "norm");

-- CreateIndex
CREATE INDEX "memorydeadletter_agent_idx" ON "memorydeadletter"("agent");

-- CreateIndex
CREATE INDEX "memoryrun_agent_startedat_idx" ON "memoryrun"("agent", "startedat");

-- CreateIndex
CREATE UNIQUE INDEX "memoryindextable_tablename_key" ON "memoryindextable"("tablename");

-- CreateIndex
CREATE INDEX "memoryvector_agent_idx" ON "memoryvector"("agent");

