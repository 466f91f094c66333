// Who may do what on the pairing routes. Host operations (approve, deny, list, make codes and
// invites, unpair any device) need the host: a loopback caller, or a key with the `owner` scope.
// Code redemption is for the local network only: loopback, private ranges, or an address inside
// one of this machine's own interface subnets.
import os from "node:os";
import ipaddr from "ipaddr.js";
import type { HttpContext } from "./http-context";
import type { Svc } from "../engines/svc";
import type { KeyEntry } from "../engines/gateway/keys";
import type { Pairing } from "../engines/pairing";
import { SvcError } from "../engines/errors";
import { requireScope } from "../engines/gateway/scopes";
import { parseIp } from "../engines/loopback-address";
import { callerFrom } from "./caller";

export function pairingOf(svc: Svc): Pairing {
  const p = svc.engines.pairing;
  if (!p) throw new SvcError("unavailable", "service_unavailable", "pairing is unavailable: the pairing engine did not start (see the server log)");
  return p;
}

/** The calling key (null: anonymous loopback): 401 for a bad key, 403 for a read_only one. */
export function pairCaller(svc: Svc, ctx: HttpContext): KeyEntry | null {
  const gw = svc.engines.gateway;
  if (!gw) throw new SvcError("unavailable", "service_unavailable", "pairing is unavailable: the gateway engine (authentication) is not running");
  const key = gw.gate.identify(callerFrom(ctx));
  if (key) ctx.state.keyId = key.id;
  return key;
}

export function requireHost(svc: Svc, ctx: HttpContext, what: string): void {
  const caller = callerFrom(ctx);
  if (caller.loopback) return;
  const key = pairCaller(svc, ctx);
  if (!key) throw new SvcError("unauthenticated", "invalid_api_key", `${what} from another machine needs a key with the "owner" scope`);
  requireScope(key, "owner");
}

export function isLanAddress(ip: string): boolean {
  const a = parseIp(ip);
  if (!a) return false;
  const range = a.range();
  if (range === "loopback" || range === "private" || range === "linkLocal" || range === "uniqueLocal") return true;
  for (const list of Object.values(os.networkInterfaces())) {
    for (const i of list ?? []) {
      if (!i.cidr) continue;
      try {
        const [net, bits] = ipaddr.parseCIDR(i.cidr);
        if (net.kind() === a.kind() && (a as any).match(net, bits)) return true;
      } catch {
        /* not a CIDR we can read */
      }
    }
  }
  return false;
}

export function requireLan(ctx: HttpContext, what: string): void {
  const caller = callerFrom(ctx);
  if (!isLanAddress(caller.ip)) throw new SvcError("forbidden", "permission_denied", `${what} is accepted from this machine or its local network only; use an invite (svc pair invite) from elsewhere`);
}
