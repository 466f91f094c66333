-- The request's OpenTelemetry trace id on its audit entry (docs/observability.md); null when untraced.
-- Added on the partitioned parent: every day partition gets it.
-- AlterTable
ALTER TABLE "auditentry" ADD COLUMN "traceid" TEXT;
