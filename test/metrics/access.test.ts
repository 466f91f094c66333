// /metrics from a non-loopback address: refused (403) unless the caller presents the
// administrative key or the Server manifest sets metrics.public: true. Judged by the socket
// address, so X-Forwarded-For: 127.0.0.1 does not help.
// The remote caller is a network namespace the test makes (test/helpers/netns.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openNetns } from "../helpers/netns";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { until } from "../helpers/http";
import { parse } from "./scrape";

const { ns, skip } = await openNetns();
const ADMIN_KEY = "sk-svc-" + "M1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v";

describe.skipIf(!!skip)("/metrics from a non-loopback address", () => {
  let s: TestSvc;
  let base: string;
  const saved = process.env.SVC_ADMIN_KEY;
  beforeAll(async () => {
    process.env.SVC_ADMIN_KEY = ADMIN_KEY;
    s = await startTestSvc({ host: ns!.hostAddr, resyncMs: 0 });
    base = `http://${ns!.hostAddr}:${s.port}`;
  });
  afterAll(async () => {
    await s?.stop();
    await ns?.close();
    if (saved === undefined) delete process.env.SVC_ADMIN_KEY;
    else process.env.SVC_ADMIN_KEY = saved;
  });

  it("refuses a caller without the admin key with 403, whatever the forwarding headers say", async () => {
    const spoof = { "x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", forwarded: "for=127.0.0.1" };
    for (const headers of [{}, spoof, { ...spoof, authorization: "Bearer sk-svc-notakeyatall" }]) {
      const r = await fetch(`${base}/metrics`, { headers });
      expect(r.status).toBe(403);
      const j: any = await r.json();
      expect(j.error.code).toBe("permission_denied");
      expect(j.error.message).toContain("metrics.public");
    }
  });

  it("serves the admin key (as Prometheus' authorization setting sends it)", async () => {
    const r = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    expect(r.status).toBe(200);
    const samples = parse(await r.text());
    // the refused scrapes above were counted too
    const refused = samples.find((x) => x.name === "svc_http_requests_total" && x.labels.route === "/metrics" && x.labels.status_class === "4xx");
    expect(refused?.value).toBe(3);
  });

  it("serves anyone once the Server manifest sets metrics.public: true", async () => {
    await s.svc.store.write([{ op: "upsert", kind: "Server", name: "local", owner: "config:test", spec: { metrics: { public: true } } }]);
    await until(() => s.svc.server.metrics?.public === true, 10_000);
    const r = await fetch(`${base}/metrics`);
    expect(r.status).toBe(200);
    expect(parse(await r.text()).some((x) => x.name === "svc_http_requests_total")).toBe(true);
  });
});
