// Key management routes (spec/gateway.md "Endpoints"); the rules live in
// engines/gateway/key-admin.ts. Statuses: 201 create / temporary, 200 list / get / patch /
// delete (revoke, the key is kept for audit), 400 invalid_request naming the field, 401 for a
// missing/invalid/revoked/expired caller key, 403 permission_denied, 404 unknown id (or one
// outside an organization key's organization), 409 conflict for manifest-owned or revoked keys.
// Every call is audited under the calling key (action keys.create, keys.list, …).
import Router from "@koa/router";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import type { Gateway } from "../../engines/gateway";
import type { KeyEntry } from "../../engines/gateway/keys";
import { bodyCheckedBy } from "../body-schema";
import { CreateBody, PatchBody, TemporaryBody } from "../../engines/gateway/key-bodies";
import { audited, gatewayOf, managementActor } from "../management";
import { keyBody } from "../key-json";

// the key administration validates these bodies with the same schemas, after it has checked who
// may act (a caller that may not manage keys learns nothing from a 400)
const readCreate = bodyCheckedBy("post", "/v1/api-keys", CreateBody);
const readTemporary = bodyCheckedBy("post", "/v1/api-keys/temporary", TemporaryBody);
const readPatch = bodyCheckedBy("patch", "/v1/api-keys/:id", PatchBody);

export default function routes(svc: Svc): Router {
  const r = new Router();

  /** Run one management operation: authenticate, do it, audit it. */
  const op = (action: string, fn: (gw: Gateway, actor: KeyEntry, ctx: Context) => Promise<unknown> | unknown, okStatus = 200) =>
    async (ctx: Context) => {
      const gw = gatewayOf(svc);
      const actor = managementActor(gw, ctx);
      await audited(gw, ctx, actor, action, ctx.params?.id ? { target_key_id: ctx.params.id } : {}, async () => {
        const body = await fn(gw, actor, ctx);
        ctx.status = okStatus;
        ctx.body = body;
        ctx.set("cache-control", "no-store");
      });
    };

  r.post("/v1/api-keys/temporary", op("keys.create_temporary", async (gw, a, ctx) => keyBody(await gw.admin.createTemporary(a, await readTemporary(ctx))), 201));
  r.post("/v1/api-keys", op("keys.create", async (gw, a, ctx) => keyBody(await gw.admin.create(a, await readCreate(ctx))), 201));
  r.get("/v1/api-keys", op("keys.list", (gw, a, ctx) => {
    const q = ctx.query as Record<string, string | undefined>;
    const keys = gw.admin.list(a, { status: q.status, key_type: q.key_type, organization_id: q.organization_id, team_id: q.team_id, user_id: q.user_id });
    // `data` like every other list of the API; `keys`, the spec's name, stays as an alias
    const data = keys.map(keyBody);
    return { object: "list", data, keys: data };
  }));
  r.get("/v1/api-keys/:id", op("keys.get", (gw, a, ctx) => keyBody(gw.admin.get(a, ctx.params.id))));
  r.patch("/v1/api-keys/:id", op("keys.update", async (gw, a, ctx) => keyBody(await gw.admin.patch(a, ctx.params.id, await readPatch(ctx)))));
  r.delete("/v1/api-keys/:id", op("keys.revoke", async (gw, a, ctx) => keyBody(await gw.admin.revoke(a, ctx.params.id))));

  return r;
}
