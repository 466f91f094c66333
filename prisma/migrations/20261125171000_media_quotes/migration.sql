-- AlterTable
ALTER TABLE "MediaJob" ADD COLUMN "priceMicros" BIGINT;
ALTER TABLE "MediaJob" ADD COLUMN "quoteId" TEXT;

