// The outbound guard (engines/net/outbound-guard.ts): under SVC_TEST_ROOT svc's outbound HTTP
// reaches only loopback or the test namespaces' range; anything else is refused in the connector,
// before a socket is opened. The destinations below are documentation addresses (RFC 5737/3849)
// and a name that is refused without a lookup, so nothing is contacted even if the guard broke:
// a broken guard shows as a timeout or an unreachable error instead of the guard's message.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebhookOutbox } from "../../engines/gateway/outbox/webhooks";
import { checkOutbound, outboundFetch, NETNS_RANGE } from "../../engines/net/outbound-guard";
import { receiver, tempDb } from "../gateway-events/helpers";
import { startEnv, type Env } from "../gateway/fixtures";

const REFUSED = /outbound guard \(SVC_TEST_ROOT is set\): refused to connect to/;

describe("outbound guard", () => {
  it("is on in this run (vitest.config.ts gives every run a SVC_TEST_ROOT)", () => {
    expect(process.env.SVC_TEST_ROOT).toBeTruthy();
  });

  it("allows loopback and the namespace range, refuses every other address and name", async () => {
    for (const ok of ["127.0.0.1", "127.9.9.9", "::1", "[::1]", "::ffff:127.0.0.1", "localhost", "198.51.100.1", "198.51.100.254"]) {
      await expect(checkOutbound(ok), ok).resolves.toBeUndefined();
    }
    expect(NETNS_RANGE).toBe("198.51.100.0/24");
    for (const bad of ["203.0.113.7", "192.0.2.1", "10.0.0.1", "2001:db8::1", "[2001:db8::1]", "::ffff:203.0.113.7", "0.0.0.0", "hooks.example.com", "localhost.example.com"]) {
      await expect(checkOutbound(bad), bad).rejects.toThrow(REFUSED);
    }
  });

  describe("a key's webhook", () => {
    let db: Awaited<ReturnType<typeof tempDb>>;
    beforeEach(async () => {
      db = await tempDb();
    });
    afterEach(async () => {
      await db.cleanup();
    });

    it("to a non-loopback receiver is refused before any connection, with the guard's reason", async () => {
      // a 60 s request timeout: had the outbox tried to connect, the error would be a timeout or
      // EHOSTUNREACH, never the guard's message
      const outbox = new WebhookOutbox(db.prisma, { resolveSecret: () => "s", log: () => {}, timeoutMs: 60_000 });
      try {
        outbox.emit({ id: "key_a", name: "A", webhook: { enabled: true, url: "https://203.0.113.7/hook", events: ["key.created"], secret: "env:X" } }, "key.created", {});
        expect(await outbox.deliverDue()).toBe(0);
        const row = await db.prisma.webhookDelivery.findFirstOrThrow();
        expect(row.deliveredAt).toBeNull();
        expect(row.lastError).toMatch(REFUSED);
        expect(row.lastError).toContain("203.0.113.7");
      } finally {
        await outbox.close();
      }
    });

    it("to a loopback receiver is delivered as before", async () => {
      const rx = await receiver();
      const outbox = new WebhookOutbox(db.prisma, { resolveSecret: () => "s", log: () => {} });
      try {
        outbox.emit({ id: "key_a", name: "A", webhook: { enabled: true, url: rx.url, events: ["key.created"], secret: "env:X" } }, "key.created", {});
        expect(await outbox.deliverDue()).toBe(1);
        expect(rx.got).toHaveLength(1);
      } finally {
        await outbox.close();
        await rx.close();
      }
    });
  });

  it("the fetch used for MCP, OAuth and media refuses a non-loopback URL and reaches loopback", async () => {
    const f = outboundFetch();
    const err = await f("http://[2001:db8::1]:8080/x").then(
      () => null,
      (e: any) => e,
    );
    expect(err?.cause?.message).toMatch(REFUSED);
    const rx = await receiver();
    try {
      const res = await f(rx.url, { method: "POST", body: "hi" });
      expect(res.status).toBe(200);
      expect(rx.got.map((r) => r.body)).toEqual(["hi"]);
    } finally {
      await rx.close();
    }
  });

  describe("a provider", () => {
    let env: Env;
    beforeEach(async () => {
      env = await startEnv();
    });
    afterEach(async () => {
      await env.stop();
    });

    it("whose baseUrl is off the machine answers 502 naming the guard, without sending", async () => {
      await env.apply([{ kind: "Provider", name: "remote", spec: { type: "openai", baseUrl: "http://203.0.113.7:9/v1", timeoutSeconds: 60, models: [{ name: "far-model" }] } }]);
      const k = await env.key();
      const r = await env.api("POST", "/v1/chat/completions", { model: "far-model", messages: [{ role: "user", content: "hi" }] }, k.secret);
      expect(r.status).toBe(502);
      expect(r.json.error).toMatchObject({ code: "upstream_error" });
      expect(r.json.error.message).toMatch(/^provider remote unreachable: .*outbound guard .*refused to connect to 203\.0\.113\.7/);
    });
  });
});
