-- Memory shared by replicas (engines/memory/pg): the lexical index as a tsvector per record
-- (written by svc, tokenized like the embedded FTS5 index) with a GIN index, and the jobs and
-- leases that make debounce, distillation and consolidation run once across replicas.
-- Only PostgreSQL has these two tables (the embedded store keeps an FTS5 table per agent and
-- timers of its one process), so they are not Prisma models: both Prisma schemas declare the
-- same models (test/scale/store-pg.test.ts). engines/memory/pg reads and writes them in raw SQL.

-- CreateTable
CREATE TABLE "memorysearch" (
    "kind" TEXT NOT NULL,
    "ref" INTEGER NOT NULL,
    "agent" TEXT NOT NULL,
    "tsv" TSVECTOR NOT NULL,

    CONSTRAINT "memorysearch_pkey" PRIMARY KEY ("kind","ref")
);

-- CreateTable
CREATE TABLE "memoryjob" (
    "kind" TEXT NOT NULL,
    "agent" TEXT NOT NULL,
    "conversationid" TEXT NOT NULL,
    "dueat" BIGINT,
    "trigger" TEXT NOT NULL DEFAULT 'debounce',
    "period" BIGINT,
    "holder" TEXT,
    "leaseuntil" TIMESTAMPTZ(3),

    CONSTRAINT "memoryjob_pkey" PRIMARY KEY ("kind","agent","conversationid")
);

-- CreateIndex
CREATE INDEX "memorysearch_agent_idx" ON "memorysearch"("agent");

-- CreateIndex
CREATE INDEX "memorysearch_tsv_idx" ON "memorysearch" USING GIN ("tsv");

-- CreateIndex
CREATE INDEX "memoryjob_dueat_idx" ON "memoryjob"("dueat");
