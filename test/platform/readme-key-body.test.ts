// The README's key-creation body (examples/api/create-key.json, every field the route accepts)
// is accepted as it is, and the key as the API shows it carries every field back.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/cli";
import { startTestSvc } from "../helpers/svc";
import { postJson } from "../helpers/http";

describe("README key-creation body", () => {
  it("is accepted with every field, and GET shows them back", async () => {
    const body = JSON.parse(readFileSync(path.join(repoRoot, "examples/api/create-key.json"), "utf8"));
    const s = await startTestSvc();
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
    } finally {
      await s.stop();
    }
  });
});
