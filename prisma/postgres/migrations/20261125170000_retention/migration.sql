-- CreateTable
CREATE TABLE "usagedaily" (
    "keyid" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "day" TEXT NOT NULL,
    "requests" INTEGER NOT NULL DEFAULT 0,
    "errors" INTEGER NOT NULL DEFAULT 0,
    "prompttokens" BIGINT NOT NULL DEFAULT 0,
    "completiontokens" BIGINT NOT NULL DEFAULT 0,
    "costmicros" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "usagedaily_pkey" PRIMARY KEY ("keyid","model","day")
);
