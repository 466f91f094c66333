-- CreateTable
CREATE TABLE "emaildelivery" (
    "id" TEXT NOT NULL,
    "keyid" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "recipient" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextattemptat" TIMESTAMP(3) NOT NULL,
    "deliveredat" TIMESTAMP(3),
    "lasterror" TEXT,
    "createdat" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "emaildelivery_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "emaildelivery_deliveredat_nextattemptat_idx" ON "emaildelivery"("deliveredat", "nextattemptat");

