-- AlterTable
ALTER TABLE "AgentTask" ADD COLUMN "answer" TEXT;
ALTER TABLE "AgentTask" ADD COLUMN "leaseUntil" DATETIME;
ALTER TABLE "AgentTask" ADD COLUMN "runner" TEXT;

-- CreateIndex
CREATE INDEX "AgentTask_runner_idx" ON "AgentTask"("runner");
