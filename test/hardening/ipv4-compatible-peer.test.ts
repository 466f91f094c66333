// A peer at the IPv4-compatible IPv6 address ::7f00:1 (the deprecated ::/96 block; not loopback:
// only ::1 is) is printed by Node as "::127.0.0.1" (libuv writes an address whose first 96 bits
// are zero with a dotted quad). ipaddr.js reads that text as the IPv4-mapped ::ffff:127.0.0.1 and
// unwraps it to 127.0.0.1, so such a peer was given loopback trust: keyless inference, pairing host
// operations (an owner-scoped invite), administration, and a key IP allowlist matched ::10.0.0.1
// against 10.0.0.0/8. Linux drops v4-mapped source addresses on
// input but not IPv4-compatible ones, so a server listening on :: (Server.spec.host) could be
// reached from such a source by someone on the network path. Only ::1, 127/8 and their
// ::ffff:-mapped forms are loopback.
//
// The whole-server part sends its requests in memory (api/secure-dispatch.ts: the handler's own
// parser on a socket carrying the given peer address), so no packet leaves 127.0.0.1.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { raw } from "../fuzz/raw-request";
import { isLoopback, isLoopbackAddress, loopbackOnly } from "../../api/loopback";
import { hostnameOf, isLoopbackName } from "../../api/host-guard";
import { isLanAddress } from "../../api/pair-access";
import { dispatchInner } from "../../api/secure-dispatch";
import { ipAllowed, parseRange } from "../../engines/gateway/keys";

const COMPAT = "::127.0.0.1";

describe("IPv4-compatible peer addresses are not loopback", () => {
  it("Node prints a peer at ::7f00:1 as ::127.0.0.1", () => {
    expect(new net.SocketAddress({ address: "::7f00:1", family: "ipv6" }).address).toBe(COMPAT);
  });

  it("the loopback decision: ::1, 127/8 and ::ffff:127/8 only", async () => {
    for (const a of ["127.0.0.1", "127.0.0.2", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "::FFFF:127.0.0.1", "::ffff:7f00:1"]) {
      expect(isLoopbackAddress(a), a).toBe(true);
    }
    for (const a of [COMPAT, "::127.0.0.2", "::7f00:1", "0:0:0:0:0:0:127.0.0.1", "::ffff:0:127.0.0.1", "64:ff9b::127.0.0.1", "::", "0.0.0.0", undefined]) {
      expect(isLoopbackAddress(a), String(a)).toBe(false);
    }
    const ctx = { req: { socket: { remoteAddress: COMPAT } } } as any;
    expect(isLoopback(ctx)).toBe(false);
    await expect(loopbackOnly(ctx, async () => {})).rejects.toMatchObject({ kind: "forbidden" });
  });

  it("a Host naming [::127.0.0.1] is no loopback name, and ::10.0.0.1 is not on the local network", () => {
    expect(isLoopbackName(hostnameOf("[::127.0.0.1]:1337"))).toBe(false);
    expect(isLoopbackName(hostnameOf("[::ffff:127.0.0.1]:1337"))).toBe(true);
    expect(isLanAddress("::10.0.0.1")).toBe(false);
    expect(isLanAddress("::ffff:10.0.0.1")).toBe(true);
  });

  it("a key's IP allowlist: ::10.0.0.1 is not in 10.0.0.0/8, ::ffff:10.0.0.1 is", () => {
    const ranges = [parseRange("10.0.0.0/8")];
    expect(ipAllowed("::10.0.0.1", ranges)).toBe(false);
    expect(ipAllowed("::ffff:10.0.0.1", ranges)).toBe(true);
    expect(ipAllowed("10.0.0.1", ranges)).toBe(true);
  });
});

describe("a request from ::127.0.0.1 gets no loopback trust (whole server)", () => {
  let s: TestSvc;
  beforeAll(async () => {
    s = await startTestSvc({ resyncMs: 0 });
    // the handler is registered once the server serves: one ordinary loopback request first
    expect((await raw(s.port, "GET", "/health")).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  const from = async (address: string, method: string, path: string, body?: unknown) => {
    const b = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const res = await dispatchInner(s.svc, { method, path, headers: { host: "localhost", ...(b ? { "content-type": "application/json" } : {}) }, body: b }, { address }, { sessionId: "ses_test" });
    let text = "";
    for await (const c of res) text += c;
    return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
  };

  it("cannot mint itself an owner-scoped pairing invite, list devices or use keyless inference", async () => {
    // the same requests from real loopback are served (the control)
    expect((await from("127.0.0.1", "POST", "/pair-invite", { scopes: ["owner"] })).status).toBe(201);
    const inv = await from(COMPAT, "POST", "/pair-invite", { scopes: ["owner"] });
    expect(inv.status).toBe(401);
    expect(inv.json?.invite).toBeUndefined();
    expect((await from(COMPAT, "POST", "/pair/code", {})).status).toBe(401);
    expect((await from(COMPAT, "GET", "/pair/devices")).status).toBe(401);
    expect((await from(COMPAT, "GET", "/v1/models")).status).toBe(401);
    // and ::ffff:127.0.0.1 (a real loopback peer on a dual-stack socket) keeps its trust
    expect((await from("::ffff:127.0.0.1", "GET", "/pair/devices")).status).toBe(200);
  });
});
