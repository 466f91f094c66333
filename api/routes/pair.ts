// Pairing (spec/local-server.md "Pairing and secure channel"). Protocol in engines/pairing.
//   GET  /pair/challenge                 {nonce, expires_at, server}: single use, 2 minutes
//   POST /pair      {nonce, public_key, name?}            202 pending host approval {request_id}
//                   {nonce, public_key, name?, code}      200 paired (pre-approved code)
//   POST /pair/hello {request_id}         202 pending | 200 paired (sealed key, delivered once) | 403 denied
//   GET  /pair/hello                      server identity; with a device key, the device
//   POST /pair/code  {code, public_key, name?}            redeem (LAN/loopback only) -> paired
//                    {scopes?}  (host)                    make a 6-digit code valid 5 minutes
//   POST /pair-invite {invite, public_key, name?}         accept a signed invite -> paired
//                     {expires_in?, scopes?, name?} (host) make an invite
//   POST /pair/unpair {device_id?}        host: any device; a device key: itself
//   GET  /pair/requests, POST /pair/requests/{id}/approve|deny, GET /pair/devices   (host)
// Host = loopback, or a key with the owner scope (api/pair-access.ts).
import Router from "@koa/router";
import type { Static } from "@sinclair/typebox";
import type { Context } from "koa";
import type { Svc } from "../../engines/svc";
import { SvcError } from "../../engines/errors";
import { checkScopes, type PairResult } from "../../engines/pairing";
import { jsonBody } from "../body-schema";
import { ApproveBody, PairBody, PairCodeBody, PairHelloBody, PairInviteBody, UnpairBody } from "../../schemas/api/pairing";
import { callerFrom } from "../caller";
import { pairCaller, pairingOf, requireHost, requireLan } from "../pair-access";

const readPair = jsonBody("post", "/pair", PairBody);
const readHello = jsonBody("post", "/pair/hello", PairHelloBody);
const readCode = jsonBody("post", "/pair/code", PairCodeBody);
const readInvite = jsonBody("post", "/pair-invite", PairInviteBody);
const readUnpair = jsonBody("post", "/pair/unpair", UnpairBody);
const readApprove = jsonBody("post", "/pair/requests/:id/approve", ApproveBody);

/** These bodies may be left out: no body reads as {} (which each schema accepts). */
const optional = <T>(read: (ctx: Context) => Promise<T>) => async (ctx: Context): Promise<T | Record<string, never>> =>
  ctx.get("content-length") === "0" || (!ctx.get("content-length") && !ctx.get("transfer-encoding")) ? {} : read(ctx);

function paired(ctx: Context, r: PairResult) {
  ctx.status = 200;
  ctx.body = { status: "paired", ...r };
}

export default function pair(svc: Svc): Router {
  const r = new Router();

  r.get("/pair/challenge", async (ctx) => {
    const p = pairingOf(svc);
    const c = await p.challenge();
    ctx.set("cache-control", "no-store");
    ctx.body = { nonce: c.nonce, expires_at: new Date(c.expiresMs).toISOString(), server: p.server() };
  });

  r.post("/pair", async (ctx) => {
    const p = pairingOf(svc);
    const b = await readPair(ctx);
    const ip = callerFrom(ctx).ip;
    if (b.code !== undefined) {
      requireLan(ctx, "pairing by code");
      return paired(ctx, await p.redeemCode(b, ip));
    }
    const req = await p.request(b, ip);
    svc.log.info("pairing request waiting for approval", { request_id: req.id, name: req.name, ip });
    ctx.status = 202;
    ctx.body = {
      status: "pending",
      request_id: req.id,
      expires_at: new Date(req.expiresMs).toISOString(),
      server: p.server(),
      message: `approve on the host: svc pair approve ${req.id}; then POST /pair/hello {"request_id": "${req.id}"}`,
    };
  });

  r.post("/pair/hello", async (ctx) => {
    const p = pairingOf(svc);
    const b = await readHello(ctx);
    const st = await p.poll(b.request_id);
    if (st.status === "denied") throw new SvcError("forbidden", "permission_denied", "the host denied this pairing request");
    if (st.status === "pending") {
      ctx.status = 202;
      ctx.body = { status: "pending", request_id: b.request_id };
      return;
    }
    if (!st.result) throw new SvcError("conflict", "conflict", "this pairing was approved and its key already delivered");
    paired(ctx, st.result);
  });

  r.get("/pair/hello", (ctx) => {
    const p = pairingOf(svc);
    const key = pairCaller(svc, ctx);
    const device = key ? p.device(key.id) : undefined;
    ctx.body = { server: p.server(), paired: !!device, device: device ?? null };
  });

  r.post("/pair/code", async (ctx) => {
    const p = pairingOf(svc);
    const b: Static<typeof PairCodeBody> = await optional(readCode)(ctx);
    if (b.code !== undefined) {
      requireLan(ctx, "pairing by code");
      return paired(ctx, await p.redeemCode(b, callerFrom(ctx).ip));
    }
    requireHost(svc, ctx, "making a pairing code");
    const c = await p.codes.create(checkScopes(b.scopes));
    ctx.status = 201;
    ctx.body = { code: c.code, expires_at: new Date(c.expiresMs).toISOString() };
  });

  r.post("/pair-invite", async (ctx) => {
    const p = pairingOf(svc);
    const b: Static<typeof PairInviteBody> = await optional(readInvite)(ctx);
    if (b.invite !== undefined) return paired(ctx, await p.acceptInvite(b, callerFrom(ctx).ip));
    requireHost(svc, ctx, "making a pairing invite");
    const url = typeof b.url === "string" ? b.url : svc.control?.listenUrl();
    const inv = p.createInvite({ ttlSeconds: b.expires_in, scopes: b.scopes, name: b.name, url });
    ctx.status = 201;
    ctx.body = { invite: inv.invite, expires_at: new Date(inv.payload.exp).toISOString(), server: p.server() };
  });

  r.post("/pair/unpair", async (ctx) => {
    const p = pairingOf(svc);
    const b: Static<typeof UnpairBody> = await optional(readUnpair)(ctx);
    const caller = callerFrom(ctx);
    const key = pairCaller(svc, ctx);
    const own = key ? p.device(key.id) : undefined;
    const id = typeof b.device_id === "string" ? b.device_id : own?.device_id;
    if (!id) throw new SvcError("invalid", "invalid_request", "device_id is required (or call with the device's own key)", "device_id");
    if (!own || own.device_id !== id) requireHost(svc, ctx, "unpairing another device");
    const d = await p.unpair(id);
    svc.log.info("device unpaired", { device_id: id, by: own?.device_id === id ? "device" : caller.loopback ? "host" : key?.id });
    ctx.body = { status: "unpaired", device_id: d.device_id, name: d.name };
  });

  r.get("/pair/requests", async (ctx) => {
    requireHost(svc, ctx, "listing pairing requests");
    ctx.body = {
      data: (await pairingOf(svc).pending())
        .map((q) => ({ request_id: q.id, name: q.name, ip: q.ip, expires_at: new Date(q.expiresMs).toISOString() })),
    };
  });

  r.post("/pair/requests/:id/approve", async (ctx) => {
    requireHost(svc, ctx, "approving a pairing request");
    const b: Static<typeof ApproveBody> = await optional(readApprove)(ctx);
    const q = await pairingOf(svc).approve(ctx.params.id, checkScopes(b.scopes));
    ctx.body = { status: "approved", request_id: q.id, device_id: q.result!.device_id, name: q.name, scopes: q.result!.scopes };
  });

  r.post("/pair/requests/:id/deny", async (ctx) => {
    requireHost(svc, ctx, "denying a pairing request");
    const q = await pairingOf(svc).deny(ctx.params.id);
    ctx.body = { status: q.status, request_id: q.id };
  });

  r.get("/pair/devices", (ctx) => {
    requireHost(svc, ctx, "listing paired devices");
    ctx.body = { data: pairingOf(svc).devices() };
  });

  return r;
}
