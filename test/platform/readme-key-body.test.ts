// The README's key-creation body (examples/api/create-key.json, every field the route accepts)
// is accepted as it is, and the key as the API shows it carries every field back. Its webhook is
// a loopback receiver (examples/webhooks/receiver.mjs on 127.0.0.1:8787); the test sends its
// key.created to a receiver of its own on an ephemeral loopback port instead, whatever listens
// on 8787 here.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";
import { startTestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";
import { receiver } from "../gateway-events/helpers";

describe("README key-creation body", () => {
  it("is accepted with every field, and GET shows them back", async () => {
    const body = JSON.parse(readFileSync(path.join(repoRoot, "examples/api/create-key.json"), "utf8"));
    expect(body.webhook.url).toBe("http://127.0.0.1:8787/webhook");
    const rx = await receiver();
    body.webhook.url = `http://127.0.0.1:${rx.port}/webhook`;
    const s = await startTestSvc();
    const hadSecret = process.env.SVC_WEBHOOK_SECRET;
    process.env.SVC_WEBHOOK_SECRET = "whsec_readme_body";
    try {
      const admin = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
      await s.svc.store.write([
        { op: "upsert", kind: "AccessPolicy", name: "office-hours", owner: "config:test", spec: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["*"] }] } },
      ]);
      const r = await postJson(`${s.url}/v1/api-keys`, body, { authorization: `Bearer ${admin}` });
      expect(r.status, r.text).toBe(201);
      expect(r.json.api_key).toMatch(/^sk-svc-/);
      const got: any = await (await fetch(`${s.url}/v1/api-keys/${r.json.id}`, { headers: { authorization: `Bearer ${admin}` } })).json();
      for (const [field, value] of Object.entries(body)) {
        if (field === "webhook") continue;
        expect(got[field], field).toEqual(value);
      }
      const { secret: _secret, ...webhook } = body.webhook;
      expect(got.webhook).toEqual({ ...webhook, secret_configured: true });
      expect(got).toMatchObject({ status: "active", managed_by: "api", revoked_at: null });
      await until(() => rx.got.length >= 1, 10_000);
      expect(JSON.parse(rx.got[0].body)).toMatchObject({ type: "key.created", data: { key_id: r.json.id } });
    } finally {
      await s.stop();
      await rx.close();
      if (hadSecret === undefined) delete process.env.SVC_WEBHOOK_SECRET;
      else process.env.SVC_WEBHOOK_SECRET = hadSecret;
    }
  });
});
