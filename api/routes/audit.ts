// GET /v1/audit-logs: the audit log of the key named by X-API-Key-ID, newest first, with
// cursor pagination and filters (since, until, action, status, model, metadata.workflow_id,
// metadata.user_id, limit, cursor).
// Rights: any key reads its own log (without X-API-Key-ID, or naming itself); the administrative
// key reads any; an organization key with permissions.view_all_usage reads any key of its
// organization, or (without X-API-Key-ID) the whole organization. The admin key may also omit
// the header to read every entry.
import Router from "@koa/router";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import type { Gateway } from "../../engines/gateway";
import type { KeyEntry } from "../../engines/gateway/keys";
import type { AuditQuery } from "../../engines/gateway/audit/log";
import { SvcError, invalidRequest, notFound } from "../../engines/errors";
import { audited, gatewayOf, managementActor } from "../management";
import { utcMs } from "../../engines/iso-time";

const KEY_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,252}$/;

export default function routes(svc: Svc): Router {
  const r = new Router();

  r.get("/v1/audit-logs", async (ctx) => {
    const gw = gatewayOf(svc);
    const caller = managementActor(gw, ctx);
    const headerId = ctx.get("x-api-key-id").trim();
    // A read of the log is itself a request made with a key: it is audited too.
    await audited(gw, ctx, caller, "audit_logs.list", headerId ? { target_key_id: headerId } : {}, async () => {
      const scope = resolveScope(gw, caller, caller.role === "admin", headerId);
      const page = await gw.audit.query({ ...scope, ...filters(ctx) });
      ctx.body = { object: "list", data: page.data, next_cursor: page.cursor, has_more: page.more };
    });
  });

  return r;
}

/** Which entries the caller may read, as query restrictions; throws 400/403/404. */
function resolveScope(gw: Gateway, caller: KeyEntry, admin: boolean, headerId: string): Pick<AuditQuery, "keyIds" | "organizationId"> {
  const orgViewer =
    caller.spec.key_type === "organization" && caller.spec.permissions?.view_all_usage === true && caller.spec.organization_id
      ? caller.spec.organization_id
      : undefined;
  if (!headerId) {
    if (admin) return {};
    if (orgViewer) return { organizationId: orgViewer };
    return { keyIds: [caller.id] }; // the caller's own log: the one it needs no right to read
  }
  if (!KEY_ID.test(headerId)) throw invalidRequest("X-API-Key-ID is not a valid key id", "X-API-Key-ID");
  if (headerId === caller.id) return { keyIds: [caller.id] };
  // Callers with no right to other keys' logs learn nothing about whether a key exists.
  if (!admin && !orgViewer) throw new SvcError("forbidden", "permission_denied", "this key may read only its own audit log");
  const target = gw.keys.get(headerId);
  if (!target) throw notFound(`no API key with id ${headerId}`);
  if (!admin && target.spec.organization_id !== orgViewer) {
    throw new SvcError("forbidden", "permission_denied", "this key may read audit logs of its own organization only");
  }
  return { keyIds: [target.id] };
}

function filters(ctx: Context): Omit<AuditQuery, "keyIds" | "organizationId"> {
  const q = ctx.query;
  const one = (name: string): string | undefined => {
    const v = q[name];
    if (Array.isArray(v)) throw invalidRequest(`${name} may be given once`, name);
    return v === undefined || v === "" ? undefined : v;
  };
  const date = (name: string): Date | undefined => {
    const v = one(name);
    if (v === undefined) return undefined;
    const d = new Date(utcMs(v)); // any offset; none is UTC, not the server's zone
    if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(d.getTime())) throw invalidRequest(`${name} must be an ISO 8601 timestamp`, name);
    return d;
  };
  const out: Omit<AuditQuery, "keyIds" | "organizationId"> = { since: date("since"), until: date("until") };
  const limit = one("limit");
  if (limit !== undefined) {
    if (!/^\d+$/.test(limit) || +limit < 1 || +limit > 1000) throw invalidRequest("limit must be an integer from 1 to 1000", "limit");
    out.limit = +limit;
  } else out.limit = 100;
  out.action = one("action");
  out.status = one("status");
  out.cursor = one("cursor");
  out.model = one("model");
  out.workflowId = one("metadata.workflow_id");
  out.userId = one("metadata.user_id");
  for (const [name, v] of [["model", out.model], ["metadata.workflow_id", out.workflowId], ["metadata.user_id", out.userId]] as const) {
    if (v && v.length > 200) throw invalidRequest(`${name} is too long`, name);
  }
  if (out.action && out.action.length > 200) throw invalidRequest("action is too long", "action");
  if (out.status && out.status.length > 100) throw invalidRequest("status is too long", "status");
  return out;
}
