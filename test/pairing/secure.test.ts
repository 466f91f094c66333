// The secure channel from a non-loopback address: round trip to the same handlers, streaming
// with an authenticated end frame, replay (409), tampered ciphertext (400), expired session (401),
// admin refused through the channel, and remote agent run/dispatch: 426 in the clear, served
// through the channel. The remote caller is a network namespace the test makes
// (test/helpers/netns.ts).
import path from "node:path";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { eventually, until } from "../helpers/http";
import { scriptedProvider, parseSse, type ScriptedProvider } from "../agents/scripted";
import { SecureSession, acceptInvite, type DeviceState } from "../../cli/pair-client";
import { openNetns } from "../helpers/netns";

const { ns, skip } = await openNetns();

describe.skipIf(!!skip)("secure channel from a non-loopback address", () => {
  let s: TestSvc;
  let up: ScriptedProvider;
  let base: string;
  let admin: string;
  let dev: DeviceState;

  beforeAll(async () => {
    const home = await tempDir("svc-secure-");
    s = await startTestSvc({ host: ns!.hostAddr, home, resyncMs: 0 });
    base = `http://${ns!.hostAddr}:${s.port}`;
    admin = readFileSync(path.join(home, "admin.key"), "utf8").trim();
    up = await scriptedProvider();
    up.script("m", () => ({ text: "hello through the channel" }));
    await s.svc.store.write([
      { op: "upsert", kind: "Provider", name: "p", owner: "config:test", spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 5, models: [{ name: "m" }] } },
      { op: "upsert", kind: "Agent", name: "far", owner: "config:test", spec: { defaultModel: "m", maxIterations: 2 } },
    ]);
    await until(() => s.svc.store.get("Agent", "far")?.status.conditions?.[0]?.status === "True", 10_000);
    // pairing from afar: an invite made with an owner-scoped key (the host is not loopback here)
    const owner = await fetch(`${base}/v1/api-keys`, { method: "POST", headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" }, body: JSON.stringify({ name: "owner", scopes: ["owner"] }) }).then((r) => r.json() as any);
    const noOwner = await fetch(`${base}/pair-invite`, { method: "POST", headers: { authorization: `Bearer ${dev?.api_key ?? "sk-svc-nope"}` } });
    expect(noOwner.status).toBe(401);
    const inv = await fetch(`${base}/pair-invite`, { method: "POST", headers: { authorization: `Bearer ${owner.api_key}`, "content-type": "application/json" }, body: "{}" }).then((r) => r.json() as any);
    dev = await acceptInvite(inv.invite, "remote-device");
    expect(dev.url).toBe(base);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await up?.close();
    await ns?.close();
  });

  it("a device key without owner cannot make invites or codes from afar (403 naming the scope)", async () => {
    const r = await fetch(`${base}/pair/code`, { method: "POST", headers: { authorization: `Bearer ${dev.api_key}` } });
    expect(r.status).toBe(403);
    expect(((await r.json()) as any).error.message).toMatch(/"owner" scope/);
  });

  it("round-trips a request to the same handlers, as the remote caller", async () => {
    const ses = await SecureSession.forDevice(dev);
    const a = await ses.call({ method: "POST", path: "/v1/chat/completions", body: { model: "m", messages: [{ role: "user", content: "hi" }] } });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body.toString()).choices[0].message.content).toBe("hello through the channel");
    expect(a.headers["x-request-id"]).toBeTruthy();
    // the inner request is judged as the remote caller: its own key, a wrong one is a 401
    const r = await ses.call({ method: "GET", path: "/v1/models", headers: { authorization: "Bearer sk-svc-wrong" } });
    expect(r.status).toBe(401);
    // opening a session from afar needs a valid key
    await expect(SecureSession.open(base, dev.server.public_key)).rejects.toMatchObject({ status: 401 });
  });

  it("streams an answer frame by frame, closed by the authenticated end frame", async () => {
    // an upstream that sends its first words, then waits until the device has received them
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = createServer((req, res) => {
      req.resume();
      req.on("end", async () => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const chunk = (content: string | null, finish: string | null = null) =>
          res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "slow", choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }] })}\n\n`);
        chunk("first ");
        await gate;
        chunk("second");
        chunk(null, "stop");
        res.end("data: [DONE]\n\n");
      });
    });
    await new Promise<void>((r) => slow.listen(0, "127.0.0.1", r));
    await s.svc.store.write([{ op: "upsert", kind: "Provider", name: "slow", owner: "config:test", spec: { type: "openai", baseUrl: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/v1`, models: [{ name: "slow" }] } }]);
    await until(() => s.svc.store.get("Provider", "slow")?.status.conditions?.[0]?.status === "True", 10_000);
    try {
      const ses = await SecureSession.forDevice(dev);
      let seen = "";
      const a = await ses.call({ method: "POST", path: "/v1/chat/completions", body: { model: "slow", stream: true, messages: [{ role: "user", content: "hi" }] } }, (c) => {
        seen += c.toString();
        if (seen.includes("first")) release(); // the upstream goes on only once this arrived
      });
      expect(a.status).toBe(200);
      expect(a.headers["content-type"]).toMatch(/event-stream/);
      const text = a.body.toString();
      expect(text).toContain("data: [DONE]");
      const content = text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)).choices?.[0]?.delta?.content ?? "").join("");
      expect(content).toBe("first second");
      expect(a.frames).toBeGreaterThan(3); // head, at least two data frames, end
    } finally {
      release();
      slow.closeAllConnections();
      slow.close();
    }
  });

  it("refuses a replayed call (409), a tampered one (400) and an expired session (401)", async () => {
    const ses = await SecureSession.forDevice(dev);
    const env = ses.envelope({ method: "GET", path: "/v1/models" });
    expect((await ses.send(env)).status).toBe(200);
    await expect(ses.send(env)).rejects.toMatchObject({ status: 409, code: "replay_refused" });
    const env2 = ses.envelope({ method: "GET", path: "/v1/models" });
    const ct = Buffer.from(env2.ciphertext, "base64url");
    ct[3] ^= 1;
    await expect(ses.send({ ...env2, ciphertext: ct.toString("base64url") })).rejects.toMatchObject({ status: 400, code: "decryption_failed" });
    await expect(ses.send({ ...env2, seq: env2.seq + 1 })).rejects.toMatchObject({ status: 400, code: "decryption_failed" });
    expect((await ses.send(env2)).status).toBe(200); // the genuine one still goes through
    const short = await SecureSession.forDevice(dev, 1);
    expect((await short.call({ method: "GET", path: "/v1/models" })).status).toBe(200);
    // polled, not slept: the first refused call after the 1 s lifetime must be session_expired
    let refused: any;
    await eventually(async () => (refused = await short.call({ method: "GET", path: "/v1/models" }).then(() => undefined, (e) => e)) !== undefined);
    expect(refused).toMatchObject({ status: 401, code: "session_expired" });
  });

  it("keeps administration loopback-only through the channel", async () => {
    const ses = await SecureSession.open(base, dev.server.public_key, { apiKey: admin });
    await expect(ses.call({ method: "GET", path: "/admin/config/export?format=yaml" })).rejects.toMatchObject({ status: 403 });
    const keys = await ses.call({ method: "GET", path: "/v1/api-keys" }); // key management is not admin-by-address
    expect(keys.status).toBe(200);
  });

  it("requires the channel for remote agent run and dispatch (426), and serves them through it", async () => {
    const plain = await fetch(`${base}/agents/far/run`, { method: "POST", headers: { authorization: `Bearer ${dev.api_key}`, "content-type": "application/json" }, body: JSON.stringify({ prompt: "hi" }) });
    expect(plain.status).toBe(426);
    expect(((await plain.json()) as any).error.code).toBe("secure_channel_required");
    const d = await fetch(`${base}/agents/far/dispatch`, { method: "POST", headers: { authorization: `Bearer ${dev.api_key}`, "content-type": "application/json" }, body: JSON.stringify({ prompt: "hi" }) });
    expect(d.status).toBe(426);
    const ses = await SecureSession.forDevice(dev);
    const run = await ses.call({ method: "POST", path: "/agents/far/run", body: { prompt: "hi" } });
    expect(run.status).toBe(200);
    expect(JSON.parse(run.body.toString())).toMatchObject({ status: "completed", output: "hello through the channel" });
    const streamed = await ses.call({ method: "POST", path: "/agents/far/run", body: { prompt: "hi", stream: true } });
    expect(parseSse(streamed.body.toString()).map((e) => e.event)).toContain("done");
    const disp = await ses.call({ method: "POST", path: "/agents/far/dispatch", body: { prompt: "hi" } });
    expect(disp.status).toBe(202);
  });

  it("refuses remote agent calls through the channel for a key without the scope (403 naming it)", async () => {
    const k = await fetch(`${base}/v1/api-keys`, { method: "POST", headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" }, body: JSON.stringify({ name: "infer-only", scopes: ["inference"] }) }).then((r) => r.json() as any);
    const ses = await SecureSession.open(base, dev.server.public_key, { apiKey: k.api_key });
    for (const [p, scope] of [["/agents/far/run", "agents:run"], ["/agents/far/dispatch", "agents:dispatch"]]) {
      const r = await ses.call({ method: "POST", path: p, body: { prompt: "hi" } });
      expect(r.status, p).toBe(403);
      expect(JSON.parse(r.body.toString()).error.message).toContain(`"${scope}" scope`);
    }
  });
});
