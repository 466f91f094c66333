-- GET /v1/usage's roll-up of the audit log (engines/gateway/usage-report.ts): per UTC day, key,
-- organization, model, provider, action, failure status ('' = success) and latency bucket (exact
-- below 100 ms, then 10 ms / 100 ms / 1 s steps, as the report's percentiles). Triggers keep it:
-- every audit insert adds to its row and every delete (retention) subtracts, whatever wrote it.
CREATE TABLE "usagerollup" (
    "day" TEXT NOT NULL,
    "apikeyid" TEXT NOT NULL,
    "organizationid" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "st" TEXT NOT NULL,
    "lat" INTEGER NOT NULL,
    "n" INTEGER NOT NULL,
    "prompttokens" BIGINT NOT NULL,
    "completiontokens" BIGINT NOT NULL,
    "costmicros" BIGINT NOT NULL,
    "apikeyname" TEXT NOT NULL,

    CONSTRAINT "usagerollup_pkey" PRIMARY KEY ("day", "apikeyid", "organizationid", "model", "provider", "action", "st", "lat")
);

-- what the audit log already holds
INSERT INTO usagerollup ("day", "apikeyid", "organizationid", "model", "provider", "action", "st", "lat", n, prompttokens, completiontokens, costmicros, apikeyname)
SELECT to_char(a."timestamp", 'YYYY-MM-DD') AS day, coalesce(a.apikeyid, '') AS apikeyid, coalesce(a.organizationid, '') AS organizationid, coalesce(a.model, '') AS model, coalesce(a.provider, '') AS provider, a.action AS action, CASE WHEN a.status = 'success' THEN '' ELSE a.status END AS st, CASE WHEN a.latencyms < 100 THEN a.latencyms WHEN a.latencyms < 1000 THEN a.latencyms - a.latencyms % 10 WHEN a.latencyms < 10000 THEN a.latencyms - a.latencyms % 100 ELSE a.latencyms - a.latencyms % 1000 END AS lat, COUNT(*)::int AS n, SUM(a.prompttokens)::bigint AS pt, SUM(a.completiontokens)::bigint AS ct, SUM(a.costmicros)::bigint AS cm, MAX(coalesce(a.apikeyname, '')) AS kn
FROM auditentry a GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;

-- rows in key order, so concurrent flushes of several replicas lock roll-up rows in one order
CREATE FUNCTION usagerollup_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usagerollup ("day", "apikeyid", "organizationid", "model", "provider", "action", "st", "lat", n, prompttokens, completiontokens, costmicros, apikeyname)
  SELECT to_char(a."timestamp", 'YYYY-MM-DD') AS day, coalesce(a.apikeyid, '') AS apikeyid, coalesce(a.organizationid, '') AS organizationid, coalesce(a.model, '') AS model, coalesce(a.provider, '') AS provider, a.action AS action, CASE WHEN a.status = 'success' THEN '' ELSE a.status END AS st, CASE WHEN a.latencyms < 100 THEN a.latencyms WHEN a.latencyms < 1000 THEN a.latencyms - a.latencyms % 10 WHEN a.latencyms < 10000 THEN a.latencyms - a.latencyms % 100 ELSE a.latencyms - a.latencyms % 1000 END AS lat, COUNT(*)::int AS n, SUM(a.prompttokens)::bigint AS pt, SUM(a.completiontokens)::bigint AS ct, SUM(a.costmicros)::bigint AS cm, MAX(coalesce(a.apikeyname, '')) AS kn
  FROM added a GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
  ON CONFLICT ("day", "apikeyid", "organizationid", "model", "provider", "action", "st", "lat") DO UPDATE SET
    n = usagerollup.n + excluded.n, prompttokens = usagerollup.prompttokens + excluded.prompttokens,
    completiontokens = usagerollup.completiontokens + excluded.completiontokens, costmicros = usagerollup.costmicros + excluded.costmicros,
    apikeyname = greatest(usagerollup.apikeyname, excluded.apikeyname);
  RETURN NULL;
END $$;

CREATE FUNCTION usagerollup_subtract() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE usagerollup u SET n = u.n - d.n, prompttokens = u.prompttokens - d.pt, completiontokens = u.completiontokens - d.ct, costmicros = u.costmicros - d.cm
  FROM (SELECT to_char(a."timestamp", 'YYYY-MM-DD') AS day, coalesce(a.apikeyid, '') AS apikeyid, coalesce(a.organizationid, '') AS organizationid, coalesce(a.model, '') AS model, coalesce(a.provider, '') AS provider, a.action AS action, CASE WHEN a.status = 'success' THEN '' ELSE a.status END AS st, CASE WHEN a.latencyms < 100 THEN a.latencyms WHEN a.latencyms < 1000 THEN a.latencyms - a.latencyms % 10 WHEN a.latencyms < 10000 THEN a.latencyms - a.latencyms % 100 ELSE a.latencyms - a.latencyms % 1000 END AS lat, COUNT(*)::int AS n, SUM(a.prompttokens)::bigint AS pt, SUM(a.completiontokens)::bigint AS ct, SUM(a.costmicros)::bigint AS cm, MAX(coalesce(a.apikeyname, '')) AS kn FROM removed a GROUP BY 1, 2, 3, 4, 5, 6, 7, 8) d
  WHERE (u.day, u.apikeyid, u.organizationid, u.model, u.provider, u.action, u.st, u.lat) = (d.day, d.apikeyid, d.organizationid, d.model, d.provider, d.action, d.st, d.lat);
  -- only the rows this delete touched, not a scan of the whole roll-up
  DELETE FROM usagerollup u USING (SELECT to_char(a."timestamp", 'YYYY-MM-DD') AS day, coalesce(a.apikeyid, '') AS apikeyid, coalesce(a.organizationid, '') AS organizationid, coalesce(a.model, '') AS model, coalesce(a.provider, '') AS provider, a.action AS action, CASE WHEN a.status = 'success' THEN '' ELSE a.status END AS st, CASE WHEN a.latencyms < 100 THEN a.latencyms WHEN a.latencyms < 1000 THEN a.latencyms - a.latencyms % 10 WHEN a.latencyms < 10000 THEN a.latencyms - a.latencyms % 100 ELSE a.latencyms - a.latencyms % 1000 END AS lat, COUNT(*)::int AS n, SUM(a.prompttokens)::bigint AS pt, SUM(a.completiontokens)::bigint AS ct, SUM(a.costmicros)::bigint AS cm, MAX(coalesce(a.apikeyname, '')) AS kn FROM removed a GROUP BY 1, 2, 3, 4, 5, 6, 7, 8) d
  WHERE u.n <= 0 AND (u.day, u.apikeyid, u.organizationid, u.model, u.provider, u.action, u.st, u.lat) = (d.day, d.apikeyid, d.organizationid, d.model, d.provider, d.action, d.st, d.lat);
  RETURN NULL;
END $$;

CREATE TRIGGER auditentry_rollup_insert AFTER INSERT ON auditentry REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION usagerollup_add();
CREATE TRIGGER auditentry_rollup_delete AFTER DELETE ON auditentry REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION usagerollup_subtract();
