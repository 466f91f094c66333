// Pairing and the secure channel over 3 replicas sharing PostgreSQL, Redis and one identity file
// (SVC_PAIRING_IDENTITY_FILE): a pairing begun on replica 1 is approved and finished on 2, and a
// secure session opened on 2 serves calls on 3; a replayed call is refused on any replica.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import path from "node:path";
import { missingServices } from "../helpers/services";
import { tempDir } from "../helpers/svc";
import { requestPairing, waitForApproval, SecureSession, type DeviceState } from "../../cli/pair-client";
import { startCluster, everywhere, type Replica } from "./cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

describe.skipIf(!!missing)("pairing across 3 replicas", () => {
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;
  const saved = process.env.SVC_PAIRING_IDENTITY_FILE;

  beforeAll(async () => {
    process.env.SVC_PAIRING_IDENTITY_FILE = path.join(await tempDir("svc-identity-"), "identity.key");
    ({ rs, stop } = await startCluster(3));
  }, 120_000);

  afterAll(async () => {
    await stop?.();
    if (saved === undefined) delete process.env.SVC_PAIRING_IDENTITY_FILE;
    else process.env.SVC_PAIRING_IDENTITY_FILE = saved;
  });

  it("begun on 1, approved and finished on 2, secure calls served by 3; a replay is refused everywhere", async () => {
    const pending = await requestPairing(rs[0].url, "phone");
    const listed = await rs[1].api("GET", "/pair/requests");
    expect(listed.json.data.map((q: any) => q.request_id)).toContain(pending.requestId);
    const ok = await rs[1].api("POST", `/pair/requests/${pending.requestId}/approve`, {});
    expect(ok.status).toBe(200);
    // a second decision on another replica is a conflict
    expect((await rs[2].api("POST", `/pair/requests/${pending.requestId}/approve`, {})).status).toBe(409);
    const dev: DeviceState = await waitForApproval(rs[1].url, "phone", pending, 10_000, 50);
    expect(dev.server.public_key).toBe(pending.server.public_key); // one identity on every replica
    // the sealed key is delivered once, whichever replica is asked next
    const again = await fetch(`${rs[2].url}/pair/hello`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ request_id: pending.requestId }) });
    expect(again.status).toBe(409);
    await everywhere(rs, "ApiKey", dev.device_id);

    const ses = await SecureSession.open(rs[1].url, dev.server.public_key, { apiKey: dev.api_key });
    Object.assign(ses, { url: rs[2].url });
    const env = ses.envelope({ method: "GET", path: "/v1/models" });
    const a = await ses.send(env);
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body.toString("utf8")).data.map((m: any) => m.id)).toContain("gpt-x");
    const replay = await fetch(`${rs[0].url}/secure/call`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(env) });
    expect(replay.status).toBe(409);
    expect(((await replay.json()) as any).error.code).toBe("replay_refused");
    // unpairing through replica 1 ends the session on every replica
    expect((await rs[0].api("POST", "/pair/unpair", { device_id: dev.device_id })).status).toBe(200);
    const after = await fetch(`${rs[2].url}/secure/call`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ses.envelope({ method: "GET", path: "/v1/models" })) });
    expect(after.status).toBe(404);
  });
});
