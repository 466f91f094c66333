-- CreateTable
CREATE TABLE "mediajob" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "model" TEXT,
    "upstreamid" TEXT,
    "status" TEXT NOT NULL,
    "ownerkeyid" TEXT,
    "result" TEXT,
    "error" TEXT,
    "createdat" TIMESTAMP(3) NOT NULL,
    "updatedat" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "mediajob_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "mediajob_ownerkeyid_idx" ON "mediajob"("ownerkeyid");

