-- CreateTable
CREATE TABLE "Reservation" (
    "id" INTEGER NOT NULL PRIMARY KEY,
    "keyId" TEXT NOT NULL,
    "entities" TEXT NOT NULL,
    "day" TEXT NOT NULL,
    "month" TEXT NOT NULL,
    "spendMicros" BIGINT NOT NULL,
    "promptTokens" INTEGER NOT NULL,
    "tokens" BIGINT NOT NULL,
    "at" BIGINT NOT NULL,
    "requestId" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "model" TEXT,
    "keyName" TEXT,
    "organizationId" TEXT,
    "ipAddress" TEXT
);
