-- Each agent's current direct-chat conversation, for the cluster (engines/memory/pg/open.ts):
-- a direct-chat turn in another conversation, served by any replica, distills the previous one at
-- once, as the embedded mode does in its one process. Only PostgreSQL has this table (embedded
-- mode keeps it in memory), so it is not a Prisma model; memory reads and writes it in raw SQL.

-- CreateTable
CREATE TABLE "memorychat" (
    "agent" TEXT NOT NULL,
    "conversationid" TEXT NOT NULL,

    CONSTRAINT "memorychat_pkey" PRIMARY KEY ("agent")
);
