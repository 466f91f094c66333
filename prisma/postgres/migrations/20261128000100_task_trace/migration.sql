-- An agent task's W3C traceparent (docs/observability.md): its spans on any replica join one trace.
-- AlterTable
ALTER TABLE "agenttask" ADD COLUMN "traceparent" TEXT;
