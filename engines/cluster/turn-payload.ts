// The argument of one limits.lua call (engines/cluster/shared-limits.ts): a turn's settles and
// admissions. What requests of one key share (entities, limits, day and month) is sent once as a
// shape and each request as a short array naming it: Redis decodes the JSON and builds the key
// names of a shape once a call rather than once a request, and Redis's CPU, which every replica
// shares, follows what it decodes.
import type { SharedRequest } from "../gateway/limits/types";
import type { SettleItem } from "./usage-ledger";

type AdmissionShape = Omit<SharedRequest, "s" | "t" | "x" | "kn" | "checks"> & { checks: object[] };

/** the same limits, entities and periods: requests of one key in one call */
function sameShape(a: SharedRequest, b: SharedRequest): boolean {
  if (a.lim !== b.lim || a.pm !== b.pm || a.burst !== b.burst || a.ph !== b.ph || a.pd !== b.pd || a.mr !== b.mr) return false;
  if (a.ents.length !== b.ents.length || a.ents.some((e, i) => e !== b.ents[i])) return false;
  if (a.checks.length !== b.checks.length) return false;
  return a.checks.every((c, i) => {
    const d = b.checks[i];
    return c.e === d.e && c.td === d.td && c.tm === d.tm && c.bd === d.bd && c.bm === d.bm && c.bt === d.bt;
  });
}

export function turnPayload(prefix: string, ttl: number, settles: SettleItem[], admits: Array<{ req: SharedRequest; id: string }>): string {
  const ss: object[] = [];
  const s: unknown[] = [];
  const settleShapes = new Map<string, number>();
  for (const x of settles) {
    const key = `${x.ents.join(",")}|${x.re.join(",")}|${x.day}|${x.month}`;
    let i = settleShapes.get(key);
    if (i === undefined) {
      i = ss.push({ ents: x.ents, re: x.re, day: x.day, month: x.month }) - 1;
      settleShapes.set(key, i);
    }
    // (tries: the calls that carried it and whose answer never came; limits.lua skips it if one ran)
    s.push(x.tries?.length ? [i, x.id, x.rs, x.rt, x.s, x.t, x.served ? 1 : 0, x.tries] : [i, x.id, x.rs, x.rt, x.s, x.t, x.served ? 1 : 0]);
  }
  const as: AdmissionShape[] = [];
  const a: unknown[] = [];
  // shapes by key, day and month; a key whose limits changed within the call gets a second one
  const byKey = new Map<string, Array<[SharedRequest, number]>>();
  for (const { req, id } of admits) {
    const key = `${req.k}|${req.day}|${req.month}`;
    const known = byKey.get(key);
    let i = known?.find(([r]) => sameShape(r, req))?.[1];
    if (i === undefined) {
      // what limits.lua reads, no more (not the refusal-only fields `whose`, `cur`)
      const checks = req.checks.map((c) => ({ e: c.e, td: c.td, tm: c.tm, bd: c.bd, bm: c.bm, bt: c.bt }));
      i = as.push({ k: req.k, lim: req.lim, pm: req.pm, burst: req.burst, ph: req.ph, pd: req.pd, mr: req.mr, ents: req.ents, day: req.day, month: req.month, checks }) - 1;
      if (known) known.push([req, i]);
      else byKey.set(key, [[req, i]]);
    }
    a.push([i, id, req.s, req.t, req.x ? 1 : 0, req.kn ? 1 : 0]);
  }
  return JSON.stringify({ p: prefix, ttl, ss, s, as, a });
}
