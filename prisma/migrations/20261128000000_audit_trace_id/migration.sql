-- The request's OpenTelemetry trace id on its audit entry (docs/observability.md); null when untraced.
-- AlterTable
ALTER TABLE "AuditEntry" ADD COLUMN "traceId" TEXT;
