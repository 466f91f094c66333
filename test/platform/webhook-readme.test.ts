// The README's webhook verification code (examples/webhooks/verify.mjs, pasted verbatim in the
// README) accepts a delivery made by a real svc, and refuses it when the secret, body or
// timestamp differ.
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";
import { startTestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";

type Verify = (secret: string, headers: IncomingHttpHeaders, rawBody: Buffer | string, toleranceSeconds?: number) => boolean;

describe("README webhook verification", () => {
  it("verifies a webhook svc delivered", async () => {
    const file = pathToFileURL(path.join(repoRoot, "examples/webhooks/verify.mjs")).href;
    const { verifySvcWebhook } = (await import(file)) as { verifySvcWebhook: Verify };
    const got: Array<{ headers: IncomingHttpHeaders; body: Buffer; verified: boolean }> = [];
    const secret = "whsec_readme_example_secret";
    const rx = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const verified = verifySvcWebhook(secret, req.headers, body);
        got.push({ headers: req.headers, body, verified });
        res.writeHead(verified ? 200 : 401).end();
      });
    });
    await new Promise<void>((r) => rx.listen(0, "127.0.0.1", r));
    const hook = `http://127.0.0.1:${(rx.address() as AddressInfo).port}/hook`;
    const s = await startTestSvc();
    try {
      const admin = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
      const made = await postJson(
        `${s.url}/v1/api-keys`,
        { name: "hooked", webhook: { enabled: true, url: hook, events: ["key.created", "key.revoked"], secret } },
        { authorization: `Bearer ${admin}` },
      );
      expect(made.status, made.text).toBe(201);
      await until(() => got.length >= 1, 15_000);
      const d = got[0];
      expect(d.verified).toBe(true);
      const event = JSON.parse(d.body.toString("utf8"));
      expect(event).toMatchObject({ type: "key.created", data: { key_id: made.json.id, key_name: "hooked" } });
      expect(event.id).toBe(d.headers["svc-webhook-id"]);
      expect(d.headers["svc-webhook-signature"]).toMatch(/^v1=[0-9a-f]{64}$/);

      // the same code refuses a wrong secret, a changed body, a changed or stale timestamp
      expect(verifySvcWebhook("another-secret", d.headers, d.body)).toBe(false);
      expect(verifySvcWebhook(secret, d.headers, Buffer.concat([d.body, Buffer.from(" ")]))).toBe(false);
      const ts = Number(d.headers["svc-webhook-timestamp"]);
      expect(verifySvcWebhook(secret, { ...d.headers, "svc-webhook-timestamp": String(ts + 1) }, d.body)).toBe(false);
      expect(verifySvcWebhook(secret, d.headers, d.body.toString("utf8"))).toBe(true); // a string body works too
      expect(verifySvcWebhook(secret, d.headers, d.body, 300)).toBe(true);
    } finally {
      await s.stop();
      await new Promise<void>((r) => rx.close(() => r()));
    }
  });
});
