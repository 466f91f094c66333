-- AlterTable
ALTER TABLE "mediajob" ADD COLUMN     "pricemicros" BIGINT,
ADD COLUMN     "quoteid" TEXT;

