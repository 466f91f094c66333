-- AlterTable
ALTER TABLE "agenttask" ADD COLUMN     "answer" TEXT,
ADD COLUMN     "leaseuntil" TIMESTAMP(3),
ADD COLUMN     "runner" TEXT;

-- CreateIndex
CREATE INDEX "agenttask_runner_idx" ON "agenttask"("runner");

