// Two replicas writing key changes at the same time each see the other's changes right after its
// broadcast, not only at the periodic re-read (turned off here: SVC_STORE_RELOAD_MS=0, so only
// the pub/sub messages can bring the replicas together).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { startShared, startReplica, type Shared, type Replica } from "./cluster";
import { eventually, until } from "../helpers/http";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

interface Want {
  name: string;
  revoked: boolean;
}

describe.skipIf(!!missing)("replicas writing keys concurrently converge", () => {
  let shared: Shared;
  const rs: Replica[] = [];
  let saved: string | undefined;

  beforeAll(async () => {
    shared = await startShared();
    saved = process.env.SVC_STORE_RELOAD_MS;
    process.env.SVC_STORE_RELOAD_MS = "0";
    for (let i = 0; i < 2; i++) rs.push(await startReplica());
  }, 120_000);

  afterAll(async () => {
    for (const r of rs) await r.svc.stop().catch(() => undefined);
    if (saved === undefined) delete process.env.SVC_STORE_RELOAD_MS;
    else process.env.SVC_STORE_RELOAD_MS = saved;
    await shared?.stop();
  });

  it("concurrent create / update / revoke of different keys on two replicas: every replica ends with every key's final state", async () => {
    const want = new Map<string, Want>();
    // each replica works on its own keys, both at once
    const work = async (r: Replica, tag: string) => {
      for (let i = 0; i < 12; i++) {
        const c = await r.api("POST", "/v1/api-keys", { name: `${tag}-${i}` });
        expect(c.status).toBe(201);
        const id: string = c.json.id;
        want.set(id, { name: `${tag}-${i}`, revoked: false });
        const p = await r.api("PATCH", `/v1/api-keys/${id}`, { name: `${tag}-${i}-renamed` });
        expect(p.status, JSON.stringify(p.json)).toBe(200);
        want.set(id, { name: `${tag}-${i}-renamed`, revoked: false });
        if (i % 3 === 0) {
          const d = await r.api("DELETE", `/v1/api-keys/${id}`);
          expect(d.status).toBe(200);
          want.set(id, { name: `${tag}-${i}-renamed`, revoked: true });
        }
      }
    };
    await Promise.all([work(rs[0], "a"), work(rs[1], "b")]);
    expect(want.size).toBe(24);

    const wrong = () => {
      const out: string[] = [];
      rs.forEach((r, n) => {
        for (const [id, w] of want) {
          const o = r.svc.svc.store.get("ApiKey", id);
          if (!o) out.push(`replica ${n}: ${id} (${w.name}) missing`);
          else if (o.spec.name !== w.name || !!o.spec.revoked_at !== w.revoked) out.push(`replica ${n}: ${id} is ${o.spec.name}${o.spec.revoked_at ? " (revoked)" : ""}, want ${w.name}${w.revoked ? " (revoked)" : ""}`);
        }
      });
      return out;
    };
    await until(() => wrong().length === 0, 15_000, 50).catch(() => undefined);
    expect(wrong()).toEqual([]);

    // and each replica's key routes answer with that state
    for (const r of rs) {
      for (const [id, w] of want) {
        const g = await r.api("GET", `/v1/api-keys/${id}`);
        expect(g.status).toBe(200);
        expect(g.json.name).toBe(w.name);
        expect(g.json.status).toBe(w.revoked ? "revoked" : "active");
      }
    }
  });

  it("a Server change written through one replica is in effect on every replica, whichever runs the controllers", async () => {
    const origin = "http://app.example";
    const corsOf = async (r: Replica) => {
      const res = await fetch(`${r.url}/v1/models`, { headers: { origin } });
      await res.text();
      return { status: res.status, allowed: res.headers.get("access-control-allow-origin") };
    };
    for (const r of rs) expect(await corsOf(r)).toEqual({ status: 403, allowed: null });
    await rs[1].svc.svc.store.write([{ op: "upsert", kind: "Server", name: "main", owner: "config:test", spec: { cors: { allowedOrigins: [origin] }, retentionDays: 30 } }]);
    const inEffect = async () => (await Promise.all(rs.map(corsOf))).every((c) => c.status === 200 && c.allowed === origin);
    await eventually(inEffect, 15_000, 50).catch(() => undefined);
    expect(await Promise.all(rs.map(corsOf))).toEqual(rs.map(() => ({ status: 200, allowed: origin })));
    // the retention runs of every replica read the same retentionDays
    for (const r of rs) expect(r.svc.svc.server.retentionDays).toBe(30);
  });
});
