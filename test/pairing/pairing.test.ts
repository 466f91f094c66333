// Pairing end to end with the pairing client (cli/pair-client.ts): by challenge + host approval,
// by one-time code (with lockout), by signed invite; the device's key works, its scopes hold,
// unpairing revokes it; the server identity and pairings survive a restart.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, statSync, readFileSync } from "node:fs";
import path from "node:path";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";
import { runCli } from "../helpers/cli";
import { acceptInvite, pairWithCode, requestPairing, waitForApproval, loadState, SecureSession, newDeviceKey } from "../../cli/pair-client";

describe("pairing", () => {
  let s: TestSvc;
  let home: string;
  let url: string;
  const get = async (p: string, key?: string) => {
    const r = await fetch(url + p, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    return { status: r.status, json: (await r.json()) as any };
  };

  beforeAll(async () => {
    home = await tempDir("svc-pair-");
    s = await startTestSvc({ home });
    url = s.url;
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("pairs by challenge after the host approves, and the sealed key works with its scopes", async () => {
    const c = await get("/pair/challenge");
    expect(c.status).toBe(200);
    expect(c.json.server.public_key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const p = await requestPairing(url, "laptop");
    const hello = await postJson(`${url}/pair/hello`, { request_id: p.requestId });
    expect(hello.status).toBe(202);
    const listed = await get("/pair/requests");
    expect(listed.json.data.map((q: any) => q.request_id)).toContain(p.requestId);
    const ap = await postJson(`${url}/pair/requests/${p.requestId}/approve`, {});
    expect(ap.status).toBe(200);
    const dev = await waitForApproval(url, "laptop", p, 10_000, 20);
    expect(dev.api_key).toMatch(/^sk-svc-/);
    expect(dev.scopes).not.toContain("owner");
    // delivered once
    expect((await postJson(`${url}/pair/hello`, { request_id: p.requestId })).status).toBe(409);
    const me = await get("/pair/hello", dev.api_key);
    expect(me.json).toMatchObject({ paired: true, device: { device_id: dev.device_id, name: "laptop" } });
    expect((await get("/v1/models", dev.api_key)).status).toBe(200);
    // a device key is not a host: making codes from another machine needs owner; here loopback is the host
    expect((await get("/pair/devices")).json.data.map((d: any) => d.device_id)).toContain(dev.device_id);
  });

  it("a challenge nonce is single use", async () => {
    const c = await get("/pair/challenge");
    const k = newDeviceKey();
    expect((await postJson(`${url}/pair`, { nonce: c.json.nonce, public_key: k.publicKey })).status).toBe(202);
    const again = await postJson(`${url}/pair`, { nonce: c.json.nonce, public_key: k.publicKey });
    expect(again.status).toBe(400);
    expect(again.json.error.param).toBe("nonce");
    expect((await postJson(`${url}/pair`, { nonce: "made-up", public_key: k.publicKey })).status).toBe(400);
    expect((await postJson(`${url}/pair`, { nonce: (await get("/pair/challenge")).json.nonce, public_key: "not-a-key" })).json.error.param).toBe("public_key");
  });

  it("a denied request gets 403 on hello", async () => {
    const p = await requestPairing(url, "intruder");
    expect((await postJson(`${url}/pair/requests/${p.requestId}/deny`, {})).status).toBe(200);
    const h = await postJson(`${url}/pair/hello`, { request_id: p.requestId });
    expect(h.status).toBe(403);
  });

  it("pairs by a one-time code, which works once", async () => {
    const made = await postJson(`${url}/pair/code`, {});
    expect(made.status).toBe(201);
    expect(made.json.code).toMatch(/^\d{6}$/);
    const dev = await pairWithCode(url, made.json.code, "phone");
    expect(dev.api_key).toMatch(/^sk-svc-/);
    await expect(pairWithCode(url, made.json.code, "phone2")).rejects.toThrow(/wrong or expired/);
  });

  it("locks codes after 5 wrong tries: even the right code is refused until a new one is made", async () => {
    const made = await postJson(`${url}/pair/code`, { scopes: ["inference"] });
    const good = made.json.code as string;
    const wrong = good === "000000" ? "000001" : "000000";
    const k = newDeviceKey();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await postJson(`${url}/pair/code`, { code: wrong, public_key: k.publicKey })).status);
    expect(statuses).toEqual([400, 400, 400, 400, 403]);
    const locked = await postJson(`${url}/pair/code`, { code: good, public_key: k.publicKey });
    expect(locked.status).toBe(403);
    expect(locked.json.error.message).toMatch(/locked|void/);
    const fresh = await postJson(`${url}/pair/code`, { scopes: ["inference"] });
    const dev = await pairWithCode(url, fresh.json.code, "after-lock");
    expect(dev.scopes).toEqual(["inference"]);
    // scope refusal: this device may not call tools
    const t = await get("/mcp/tools", dev.api_key);
    expect(t.status).toBe(403);
    expect(t.json.error).toMatchObject({ code: "permission_denied" });
    expect(t.json.error.message).toMatch(/"tools" scope/);
  });

  it("pairs by a signed invite, single use; a forged or expired invite is refused", async () => {
    const made = await postJson(`${url}/pair-invite`, { expires_in: 600, name: "tablet" });
    expect(made.status).toBe(201);
    const dev = await acceptInvite(made.json.invite, "tablet");
    expect(dev.url).toBe(url);
    expect(dev.name).toBe("tablet");
    await expect(acceptInvite(made.json.invite, "tablet")).rejects.toThrow(/already used/);
    // tamper with the payload: the client refuses it before sending, the server too
    const [pre, body, sig] = made.json.invite.split(".");
    const payload = JSON.parse(Buffer.from(body, "base64url").toString());
    payload.scopes = ["owner"];
    const forged = [pre, Buffer.from(JSON.stringify(payload)).toString("base64url"), sig].join(".");
    await expect(acceptInvite(forged, "x")).rejects.toThrow(/signature/);
    const k = newDeviceKey();
    expect((await postJson(`${url}/pair-invite`, { invite: forged, public_key: k.publicKey })).status).toBe(400);
    const short = await postJson(`${url}/pair-invite`, { expires_in: 1 });
    // wait for the moment the invite names as its expiry (this machine's clock, the server's too)
    const exp = JSON.parse(Buffer.from(short.json.invite.split(".")[1], "base64url").toString()).exp as number;
    expect(exp).toBeGreaterThan(Date.now());
    await until(() => Date.now() > exp, 10_000);
    const late = await postJson(`${url}/pair-invite`, { invite: short.json.invite, public_key: k.publicKey });
    expect(late.status).toBe(401);
  });

  it("unpair revokes the device's key at once and ends its secure sessions", async () => {
    const made = await postJson(`${url}/pair/code`, {});
    const dev = await pairWithCode(url, made.json.code, "old-phone");
    expect((await get("/v1/models", dev.api_key)).status).toBe(200);
    const ses = await SecureSession.forDevice(dev);
    expect((await ses.call({ method: "GET", path: "/pair/hello" })).status).toBe(200);
    // the device unpairs itself with its own key
    const r = await fetch(`${url}/pair/unpair`, { method: "POST", headers: { authorization: `Bearer ${dev.api_key}` } });
    expect(r.status).toBe(200);
    const after = await get("/v1/models", dev.api_key);
    expect(after.status).toBe(401);
    expect(after.json.error.code).toBe("key_revoked");
    await expect(ses.call({ method: "GET", path: "/pair/hello" })).rejects.toThrow(/unknown secure session/);
    expect((await get("/pair/devices")).json.data.map((d: any) => d.device_id)).not.toContain(dev.device_id);
    expect((await postJson(`${url}/pair/unpair`, { device_id: dev.device_id })).status).toBe(404);
  });

  it("the CLI pairs by code and invite, lists, calls through the channel and unpairs", async () => {
    const env = { SVC_HOME: home };
    const code = await runCli(["pair", "code", "--port", String(s.port), "--json"], env);
    expect(code.code, code.stderr).toBe(0);
    const state = path.join(home, "cli-device.json");
    const paired = await runCli(["pair", "code", JSON.parse(code.stdout).code, "--url", url, "--state", state, "--name", "cli", "--json"], env);
    expect(paired.code, paired.stderr).toBe(0);
    expect(statSync(state).mode & 0o777).toBe(0o600);
    const dev = loadState(state);
    const call = await runCli(["pair", "call", "GET", "/pair/hello", "--state", state], env);
    expect(call.code, call.stderr).toBe(0);
    expect(JSON.parse(call.stdout)).toMatchObject({ paired: true, device: { device_id: dev.device_id } });
    const list = await runCli(["pair", "list", "--port", String(s.port)], env);
    expect(list.stdout).toContain(dev.device_id);
    const inv = await runCli(["pair", "invite", "create", "--port", String(s.port)], env);
    expect(inv.code, inv.stderr).toBe(0);
    const state2 = path.join(home, "cli-device2.json");
    const acc = await runCli(["pair", "invite", "accept", inv.stdout.trim(), "--state", state2], env);
    expect(acc.code, acc.stderr).toBe(0);
    const un = await runCli(["pair", "unpair", dev.device_id, "--port", String(s.port)], env);
    expect(un.code, un.stderr).toBe(0);
    expect((await get("/v1/models", dev.api_key)).status).toBe(401);
    const un2 = await runCli(["pair", "unpair", "--state", state2], env);
    expect(un2.code, un2.stderr).toBe(0);
  }, 60_000);

  it("the CLI pairs by challenge: `svc pair request` waits until `svc pair approve` on the host", async () => {
    const env = { SVC_HOME: home };
    const state = path.join(home, "cli-requested.json");
    const requesting = runCli(["pair", "request", "--url", url, "--state", state, "--name", "asking", "--wait", "60"], env);
    let id: string | undefined;
    await until(() => {
      void fetch(`${url}/pair/requests`).then((r) => r.json() as any).then((j) => (id = j.data.find((q: any) => q.name === "asking")?.request_id));
      return !!id;
    }, 30_000, 200);
    const ap = await runCli(["pair", "approve", id!, "--port", String(s.port)], env);
    expect(ap.code, ap.stderr).toBe(0);
    expect(ap.stdout).toContain("approved");
    const done = await requesting;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toContain(`svc pair approve ${id}`);
    expect((await get("/pair/hello", loadState(state).api_key)).json.paired).toBe(true);
  }, 60_000);

  it("keeps the identity key (never logged) and paired devices across a restart", async () => {
    const made = await postJson(`${url}/pair/code`, {});
    const dev = await pairWithCode(url, made.json.code, "durable");
    const before = (await get("/pair/challenge")).json.server;
    const keyFile = path.join(home, "pairing", "identity.key");
    expect(existsSync(keyFile)).toBe(true);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const pem = readFileSync(keyFile, "utf8");
    const body = pem.split("\n").filter((l) => l && !l.startsWith("-----")).join("");
    await s.stop();
    s = await startTestSvc({ home });
    url = s.url;
    expect((await get("/pair/challenge")).json.server).toEqual(before);
    expect((await get("/pair/devices")).json.data.map((d: any) => d.device_id)).toContain(dev.device_id);
    // the device's pinned identity still verifies a new secure session on the new port
    const ses = await SecureSession.open(url, dev.server.public_key, { apiKey: dev.api_key });
    expect((await ses.call({ method: "GET", path: "/v1/models" })).status).toBe(200);
    expect(JSON.stringify(s.logs)).not.toContain(body.slice(0, 40));
  }, 60_000);
  it("rate-limits code attempts per address: 10 failed tries a minute, the 11th is 429 with Retry-After", async () => {
    // a server of its own, so no other test's tries count
    const own = await startTestSvc({ home: await tempDir("svc-pair-rate-") });
    try {
      await postJson(`${own.url}/pair/code`, {});
      const k = newDeviceKey();
      const statuses: number[] = [];
      let last: Awaited<ReturnType<typeof postJson>> | undefined;
      for (let i = 0; i < 11; i++) {
        last = await postJson(`${own.url}/pair/code`, { code: "12345x", public_key: k.publicKey });
        statuses.push(last.status);
      }
      // four wrong tries, the fifth locks the codes, locked tries still count against the address
      expect(statuses).toEqual([400, 400, 400, 400, 403, 403, 403, 403, 403, 403, 429]);
      expect(last!.json.error.code).toBe("rate_limit_exceeded");
      const retry = Number(last!.headers.get("retry-after"));
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(60);
    } finally {
      await own.stop();
    }
  });

});
