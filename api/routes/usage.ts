// GET /v1/usage: the audit log grouped in SQL (engines/gateway/usage-report.ts), for the console's
// charts, `svc usage` and scripts.
//   ?group_by=key,day (also repeated; key team organization model provider day hour minute
//    metadata.workflow_id metadata.user_id)  &from=&to= (ISO 8601; to is exclusive)
//   filters: key_id team_id organization_id model provider action metadata.workflow_id metadata.user_id
//   &format=csv for CSV instead of {object: "list", data: [...]}
// Rights, as for the audit log: the administrative key sees everything; an organization key with
// permissions.view_all_usage its organization; a team key with it its team's keys; any other key
// itself. Like the audit log and key management, it needs a key, on loopback too (docs/gate.md
// "Loopback"). Filters narrow the caller's scope; they never widen it. Keyed reads are audited
// (usage.read), and management calls are not counted as usage.
import Router from "@koa/router";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import type { Gateway } from "../../engines/gateway";
import { invalidRequest } from "../../engines/errors";
import { USAGE_GROUPS, usageCsv, usageDbOf, usageReport, usageScopeOf, type UsageGroup, type UsageQuery } from "../../engines/gateway/usage-report";
import { audited, gatewayOf, managementActor } from "../management";
import { utcMs } from "../../engines/iso-time";
import { cacheUsage } from "./cache";

export default function routes(svc: Svc): Router {
  const r = new Router();

  r.get("/v1/usage", async (ctx) => {
    const gw = gatewayOf(svc);
    const { teamId, ...query } = parseQuery(ctx);
    if (teamId !== undefined) {
      const inTeam = gw.keys.all().filter((k) => k.spec.team_id === teamId).map((k) => k.id);
      query.keyIds = query.keyIds ? query.keyIds.filter((id) => inTeam.includes(id)) : inTeam;
    }
    const answer = async (scope: Partial<UsageQuery>) => {
      const q = narrow({ ...query, teams: teamsOf(gw) }, scope);
      await gw.audit.flush().catch(() => undefined); // read your own requests; a failed write is retried
      const data = await usageReport(usageDbOf(svc.db), q);
      ctx.set("cache-control", "no-store");
      if (ctx.query.format === "csv") {
        ctx.type = "text/csv";
        ctx.attachment("usage.csv");
        ctx.body = usageCsv(data, q.groupBy);
      } else ctx.body = { object: "list", group_by: q.groupBy, data, ...(caller.role === "admin" ? { cache: cacheUsage(gw.cache.totals()) } : {}) };
    };
    const caller = managementActor(gw, ctx);
    await audited(gw, ctx, caller, "usage.read", {}, () => answer(usageScopeOf(gw.keys.all(), caller)));
  });

  return r;
}

/** Intersect the query's filters with the caller's scope. */
function narrow(q: UsageQuery, scope: Partial<UsageQuery>): UsageQuery {
  const out = { ...q };
  if (scope.keyIds) out.keyIds = q.keyIds ? q.keyIds.filter((id) => scope.keyIds!.includes(id)) : scope.keyIds;
  if (scope.organizationId !== undefined) {
    if (q.organizationId !== undefined && q.organizationId !== scope.organizationId) out.keyIds = [];
    out.organizationId = scope.organizationId;
  }
  return out;
}

function teamsOf(gw: Gateway): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const k of gw.keys.all()) if (k.spec.team_id) out.push([k.id, k.spec.team_id]);
  return out;
}

function parseQuery(ctx: Context): UsageQuery & { teamId?: string } {
  const one = (name: string): string | undefined => {
    const v = ctx.query[name];
    if (Array.isArray(v)) throw invalidRequest(`${name} may be given once`, name);
    if (v !== undefined && v.length > 200) throw invalidRequest(`${name} is too long`, name);
    return v === undefined || v === "" ? undefined : v;
  };
  const date = (name: string): Date | undefined => {
    const v = one(name);
    if (v === undefined) return undefined;
    const d = new Date(utcMs(v)); // any offset; none is UTC, not the server's zone
    if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(d.getTime())) throw invalidRequest(`${name} must be an ISO 8601 date or timestamp`, name);
    return d;
  };
  const raw = ctx.query.group_by;
  const groupBy = (Array.isArray(raw) ? raw : raw ? [raw] : []).flatMap((s) => s.split(",")).map((s) => s.trim()).filter(Boolean);
  for (const g of groupBy) {
    if (!(USAGE_GROUPS as readonly string[]).includes(g)) throw invalidRequest(`group_by ${JSON.stringify(g.slice(0, 40))} is not one of ${USAGE_GROUPS.join(", ")}`, "group_by");
  }
  const format = one("format");
  if (format !== undefined && format !== "json" && format !== "csv") throw invalidRequest("format must be json or csv", "format");
  const q: UsageQuery = {
    groupBy: groupBy as UsageGroup[],
    from: date("from"),
    to: date("to"),
    organizationId: one("organization_id"),
    model: one("model"),
    provider: one("provider"),
    action: one("action"),
    workflowId: one("metadata.workflow_id"),
    userId: one("metadata.user_id"),
  };
  const keyId = one("key_id");
  if (keyId !== undefined) q.keyIds = [keyId];
  return { ...q, teamId: one("team_id") };
}
