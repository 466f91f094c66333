-- Audit retention drops whole days (prisma/repos/retention-postgres.ts): auditentry becomes a table
-- partitioned by range on "timestamp", one partition per UTC day (auditentry_pYYYYMMDD, the unit
-- of retentionDays), plus a DEFAULT partition so an insert never fails for a day without one.
-- A partitioned table's unique keys must hold the partition key: the primary key is now
-- (id, "timestamp") (prisma/postgres/schema.prisma still declares id alone, which Prisma's client
-- only uses to build WHERE clauses; ids are unique by construction, engines/gateway/audit/rows.ts).
-- A replayed row (audit journal) carries its original timestamp, so ON CONFLICT (id, "timestamp")
-- still recognises it.

ALTER TABLE "auditentry" RENAME TO "auditentry_old";
ALTER INDEX "auditentry_pkey" RENAME TO "auditentry_old_pkey";
ALTER INDEX "auditentry_apikeyid_timestamp_idx" RENAME TO "auditentry_old_apikeyid_timestamp_idx";
ALTER INDEX "auditentry_organizationid_timestamp_idx" RENAME TO "auditentry_old_organizationid_timestamp_idx";
ALTER INDEX "auditentry_timestamp_idx" RENAME TO "auditentry_old_timestamp_idx";

CREATE TABLE "auditentry" (
    "id" TEXT NOT NULL,
    "timestamp" TIMESTAMP(3) NOT NULL,
    "apikeyid" TEXT,
    "apikeyname" TEXT,
    "organizationid" TEXT,
    "requestid" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "model" TEXT,
    "provider" TEXT,
    "status" TEXT NOT NULL,
    "errorcode" TEXT,
    "latencyms" INTEGER NOT NULL,
    "prompttokens" INTEGER NOT NULL DEFAULT 0,
    "completiontokens" INTEGER NOT NULL DEFAULT 0,
    "totaltokens" INTEGER NOT NULL DEFAULT 0,
    "costmicros" BIGINT NOT NULL DEFAULT 0,
    "metadata" TEXT NOT NULL DEFAULT '{}',
    "ipaddress" TEXT,
    "useragent" TEXT,

    CONSTRAINT "auditentry_pkey" PRIMARY KEY ("id", "timestamp")
) PARTITION BY RANGE ("timestamp");

CREATE INDEX "auditentry_apikeyid_timestamp_idx" ON "auditentry"("apikeyid", "timestamp");
CREATE INDEX "auditentry_organizationid_timestamp_idx" ON "auditentry"("organizationid", "timestamp");
CREATE INDEX "auditentry_timestamp_idx" ON "auditentry"("timestamp");

CREATE TABLE "auditentry_default" PARTITION OF "auditentry" DEFAULT;

-- Adds the partition of UTC day `d` unless it exists; whatever the default partition holds for
-- that day moves into it first (partition to partition: the parent's roll-up triggers do not fire,
-- and the roll-up already counts those rows). The table is filled and given a CHECK of its range
-- before ATTACH, which then takes only SHARE UPDATE EXCLUSIVE on auditentry (inserts go on) and
-- skips scanning it. Called here, by retention (the next days, ahead of time) and by the tests.
CREATE FUNCTION auditentry_add_partition(d date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  part text := 'auditentry_p' || to_char(d, 'YYYYMMDD');
  lo timestamp := d;
  hi timestamp := d + 1;
BEGIN
  IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;
  EXECUTE format('CREATE TABLE %I (LIKE auditentry INCLUDING DEFAULTS)', part);
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK ("timestamp" >= %L AND "timestamp" < %L)', part, part || '_range', lo, hi);
  LOCK TABLE auditentry_default IN EXCLUSIVE MODE; -- no row for that day lands in it meanwhile
  EXECUTE format('WITH moved AS (DELETE FROM auditentry_default WHERE "timestamp" >= $1 AND "timestamp" < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved', part) USING lo, hi;
  EXECUTE format('ALTER TABLE auditentry ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
  RETURN true;
END $$;

-- a partition for every day the log holds (the last 400 days; older rows wait in the default
-- partition for the batched deletes) and for today and the next 7
SELECT auditentry_add_partition(d::date) FROM (
  SELECT DISTINCT date_trunc('day', "timestamp") AS d FROM auditentry_old WHERE "timestamp" >= (now() AT TIME ZONE 'UTC')::date - 400
  UNION SELECT generate_series((now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date + 7, interval '1 day')
) days ORDER BY d;

INSERT INTO "auditentry" ("id", "timestamp", "apikeyid", "apikeyname", "organizationid", "requestid", "action", "model", "provider", "status", "errorcode",
  "latencyms", "prompttokens", "completiontokens", "totaltokens", "costmicros", "metadata", "ipaddress", "useragent")
SELECT "id", "timestamp", "apikeyid", "apikeyname", "organizationid", "requestid", "action", "model", "provider", "status", "errorcode",
  "latencyms", "prompttokens", "completiontokens", "totaltokens", "costmicros", "metadata", "ipaddress", "useragent" FROM "auditentry_old";

-- the roll-up (migration usage_rollup) already counts these rows: its triggers go on the new table
-- after the copy (statement triggers with transition tables on a partitioned table see the rows of
-- every partition the statement touched)
DROP TABLE "auditentry_old";

-- The roll-up's subtraction as statements over any relation `src` holding audit rows: the delete
-- trigger's transition table, or a partition about to be dropped (DROP fires no DELETE trigger),
-- so both leave the same usagerollup.
CREATE FUNCTION usagerollup_subtract_sql(src text) RETURNS text[] LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  d text := replace($q$(SELECT to_char(a."timestamp", 'YYYY-MM-DD') AS day, coalesce(a.apikeyid, '') AS apikeyid, coalesce(a.organizationid, '') AS organizationid, coalesce(a.model, '') AS model, coalesce(a.provider, '') AS provider, a.action AS action, CASE WHEN a.status = 'success' THEN '' ELSE a.status END AS st, CASE WHEN a.latencyms < 100 THEN a.latencyms WHEN a.latencyms < 1000 THEN a.latencyms - a.latencyms % 10 WHEN a.latencyms < 10000 THEN a.latencyms - a.latencyms % 100 ELSE a.latencyms - a.latencyms % 1000 END AS lat, COUNT(*)::int AS n, SUM(a.prompttokens)::bigint AS pt, SUM(a.completiontokens)::bigint AS ct, SUM(a.costmicros)::bigint AS cm FROM {src} a GROUP BY 1, 2, 3, 4, 5, 6, 7, 8) d$q$, '{src}', src);
  k text := '(u.day, u.apikeyid, u.organizationid, u.model, u.provider, u.action, u.st, u.lat) = (d.day, d.apikeyid, d.organizationid, d.model, d.provider, d.action, d.st, d.lat)';
BEGIN
  RETURN ARRAY[
    'UPDATE usagerollup u SET n = u.n - d.n, prompttokens = u.prompttokens - d.pt, completiontokens = u.completiontokens - d.ct, costmicros = u.costmicros - d.cm FROM ' || d || ' WHERE ' || k,
    -- only the rows this delete touched, not a scan of the whole roll-up
    'DELETE FROM usagerollup u USING ' || d || ' WHERE u.n <= 0 AND ' || k
  ];
END $$;

-- EXECUTE inside the trigger function sees its transition table "removed"
CREATE OR REPLACE FUNCTION usagerollup_subtract() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  FOREACH s IN ARRAY usagerollup_subtract_sql('removed') LOOP EXECUTE s; END LOOP;
  RETURN NULL;
END $$;

CREATE FUNCTION usagerollup_subtract_table(src regclass) RETURNS void LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  FOREACH s IN ARRAY usagerollup_subtract_sql(src::text) LOOP EXECUTE s; END LOOP;
END $$;

CREATE TRIGGER auditentry_rollup_insert AFTER INSERT ON auditentry REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION usagerollup_add();
CREATE TRIGGER auditentry_rollup_delete AFTER DELETE ON auditentry REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION usagerollup_subtract();
