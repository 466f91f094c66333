-- CreateTable
CREATE TABLE "RateState" (
    "keyId" TEXT NOT NULL PRIMARY KEY,
    "state" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL
);
