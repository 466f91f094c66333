// A key's IP allowlist as users reach it: real sockets into a real svc, judged by the socket's
// address. svc listens on 127.0.0.1, on ::1, and on the IPv4-mapped ::ffff:127.0.0.1 (an IPv6
// socket whose IPv4 callers arrive as ::ffff:127.0.0.1); all loopback. Forwarding headers never
// move a caller into the list, and an enabled empty list allows no address.
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { standIn, provider, type StandIn } from "./fixtures";

let up: StandIn;
beforeAll(async () => {
  up = await standIn();
});
afterAll(async () => {
  await up?.close();
});

const SPOOF = { "x-forwarded-for": "10.1.2.3", "x-real-ip": "10.1.2.3", forwarded: "for=10.1.2.3" };

/** svc bound to `host`, called at `callAt`: per case, a key with that allowlist makes one chat call. */
function suite(title: string, host: string, callAt: string, cases: Array<[string, { enabled: boolean; addresses: string[] }, Record<string, string>, number]>) {
  describe(title, () => {
    let s: TestSvc;
    let admin: string;
    beforeAll(async () => {
      s = await startTestSvc({ host, resyncMs: 0 });
      admin = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
      const p = provider("up", up, [{ name: "gpt-x" }]);
      await s.svc.store.write([{ op: "upsert", kind: p.kind, name: p.name, owner: "config:test", spec: p.spec }]);
    });
    afterAll(async () => {
      await s?.stop();
    });
    const api = async (p: string, body: unknown, headers: Record<string, string>) => {
      const r = await fetch(`http://${callAt}:${s.port}${p}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
      return { status: r.status, json: (await r.json()) as any };
    };

    for (const [name, allowlist, headers, status] of cases) {
      it(`${name} -> ${status}`, async () => {
        const k = await api("/v1/api-keys", { name, ip_allowlist: allowlist }, { authorization: `Bearer ${admin}` });
        expect(k.status).toBe(201);
        expect(k.json.ip_allowlist).toEqual(allowlist);
        const r = await api("/v1/chat/completions", { model: "gpt-x", messages: [{ role: "user", content: "hi" }] }, { authorization: `Bearer ${k.json.api_key}`, ...headers });
        expect(r.status, JSON.stringify(r.json)).toBe(status);
        const got = status === 200 ? r.json.choices?.[0]?.message?.content : r.json.error?.code;
        expect(got).toBe(status === 200 ? "echo: hi" : "ip_not_allowed");
      });
    }
  });
}

suite("IPv4 caller (127.0.0.1)", "127.0.0.1", "127.0.0.1", [
  ["listed address", { enabled: true, addresses: ["127.0.0.1"] }, {}, 200],
  ["listed range", { enabled: true, addresses: ["10.0.0.0/8", "127.0.0.0/8"] }, {}, 200],
  ["not listed", { enabled: true, addresses: ["10.0.0.0/8"] }, {}, 403],
  ["not listed, X-Forwarded-For naming a listed address", { enabled: true, addresses: ["10.0.0.0/8"] }, SPOOF, 403],
  ["listed, X-Forwarded-For naming an unlisted address", { enabled: true, addresses: ["127.0.0.1"] }, SPOOF, 200],
  ["an IPv6 entry only", { enabled: true, addresses: ["::1"] }, {}, 403],
  ["enabled, empty list", { enabled: true, addresses: [] }, {}, 403],
  ["disabled list", { enabled: false, addresses: ["10.0.0.0/8"] }, {}, 200],
]);

suite("IPv6 caller (::1)", "::1", "[::1]", [
  ["listed address", { enabled: true, addresses: ["::1"] }, {}, 200],
  ["listed range", { enabled: true, addresses: ["::1/128", "2001:db8::/32"] }, {}, 200],
  ["not listed", { enabled: true, addresses: ["2001:db8::/32"] }, {}, 403],
  ["an IPv4 loopback entry only", { enabled: true, addresses: ["127.0.0.1"] }, {}, 403],
  ["not listed, X-Forwarded-For naming a listed address", { enabled: true, addresses: ["10.0.0.0/8"] }, SPOOF, 403],
  ["enabled, empty list", { enabled: true, addresses: [] }, {}, 403],
]);

suite("IPv4-mapped caller (::ffff:127.0.0.1)", "::ffff:127.0.0.1", "127.0.0.1", [
  ["the IPv4 entry matches", { enabled: true, addresses: ["127.0.0.1"] }, {}, 200],
  ["the IPv4 range matches", { enabled: true, addresses: ["127.0.0.0/8"] }, {}, 200],
  ["not listed", { enabled: true, addresses: ["10.0.0.0/8"] }, {}, 403],
  ["not listed, X-Forwarded-For naming a listed address", { enabled: true, addresses: ["10.0.0.0/8"] }, SPOOF, 403],
  ["enabled, empty list", { enabled: true, addresses: [] }, {}, 403],
]);
