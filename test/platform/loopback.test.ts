// Admin routes are loopback-only, judged by the socket address: a valid key does not help and
// X-Forwarded-For: 127.0.0.1 does not make a remote caller local.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nonLoopbackAddress } from "../helpers/remote";
import { startTestSvc, type TestSvc } from "../helpers/svc";

const addr = nonLoopbackAddress({ ipv6: true });
if (!addr) console.log("skipping the non-loopback admin test: this machine has no non-loopback interface address");
const ADMIN_KEY = "sk-svc-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v";

describe.skipIf(!addr)("admin routes from a non-loopback address", () => {
  let s: TestSvc;
  let base: string;
  const saved = process.env.SVC_ADMIN_KEY;
  beforeAll(async () => {
    process.env.SVC_ADMIN_KEY = ADMIN_KEY; // a valid administrative key for this server
    s = await startTestSvc({ host: addr! });
    base = `http://${addr!.includes(":") ? `[${addr}]` : addr}:${s.port}`;
  });
  afterAll(async () => {
    await s?.stop();
    if (saved === undefined) delete process.env.SVC_ADMIN_KEY;
    else process.env.SVC_ADMIN_KEY = saved;
  });

  it("serves /health to the remote address (the server is reachable)", async () => {
    const r = await fetch(`${base}/health`);
    expect(r.status).toBe(200);
  });

  it("refuses export, schema, status, plan and apply with 403, whatever the headers", async () => {
    const headers = { authorization: `Bearer ${ADMIN_KEY}`, "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", forwarded: "for=127.0.0.1" };
    for (const path of ["/admin/config/export?format=yaml", "/admin/config/schema?format=json", "/admin/config/status"]) {
      const r = await fetch(base + path, { headers });
      expect(r.status, path).toBe(403);
      const j: any = await r.json();
      expect(j.error.code).toBe("permission_denied");
      expect(JSON.stringify(j)).not.toContain(ADMIN_KEY);
    }
    const before = s.svc.store.revision;
    for (const path of ["/admin/config/plan", "/admin/config/apply"]) {
      const r = await fetch(base + path, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ document: "apiVersion: svc/v1\nkind: Agent\nmetadata: {name: intruder}\nspec: {}\n", confirm: true }),
      });
      expect(r.status, path).toBe(403);
    }
    expect(s.svc.store.revision).toBe(before);
    expect(s.svc.store.get("Agent", "intruder")).toBeUndefined();
  });
});
