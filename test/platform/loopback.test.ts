// Admin routes are loopback-only, judged by the socket address: a valid key does not help and
// X-Forwarded-For: 127.0.0.1 does not make a remote caller local. The remote caller is a network
// namespace the test makes (test/helpers/netns.ts).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openNetns } from "../helpers/netns";
import { startTestSvc, type TestSvc } from "../helpers/svc";

const { ns, skip } = await openNetns();
const ADMIN_KEY = "sk-svc-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v";

describe.skipIf(!!skip)("admin routes from a non-loopback address", () => {
  let s: TestSvc;
  let base: string;
  const saved = process.env.SVC_ADMIN_KEY;
  beforeAll(async () => {
    process.env.SVC_ADMIN_KEY = ADMIN_KEY; // a valid administrative key for this server
    s = await startTestSvc({ host: ns!.hostAddr });
    base = `http://${ns!.hostAddr}:${s.port}`;
  });
  afterAll(async () => {
    await s?.stop();
    await ns?.close();
    if (saved === undefined) delete process.env.SVC_ADMIN_KEY;
    else process.env.SVC_ADMIN_KEY = saved;
  });

  it("the caller really is another address: a server on the host end sees the namespace's", async () => {
    const seen: string[] = [];
    const probe = createServer((req, res) => (seen.push(req.socket.remoteAddress ?? ""), res.end("ok")));
    await new Promise<void>((r) => probe.listen(0, ns!.hostAddr, r));
    try {
      const r = await fetch(`http://${ns!.hostAddr}:${(probe.address() as AddressInfo).port}/`);
      expect(await r.text()).toBe("ok");
      expect(seen).toEqual([ns!.nsAddr]);
      expect(ns!.nsAddr).not.toMatch(/^127\./);
    } finally {
      await new Promise((r) => probe.close(r));
    }
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
