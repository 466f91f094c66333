// Alerts with 2 replicas on one Redis: the near-limit warning reads the shared rate bucket and,
// like every throttled alert, is sent once across replicas (not once per replica); failed
// authentications spread over replicas add up to the AlertSettings threshold.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { until } from "../helpers/http";
import { expectError } from "../gateway/fixtures";
import { receiver } from "../gateway-events/helpers";
import { startCluster, clusterKey, everywhere, type Replica } from "./cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);
const msg = [{ role: "user" as const, content: "hi" }];

describe.skipIf(!!missing)("alerts across 2 replicas", () => {
  let rs: Replica[] = [];
  let stop: (() => Promise<void>) | undefined;
  let rx: Awaited<ReturnType<typeof receiver>>;
  const hooks = () => rx.got.map((r) => JSON.parse(r.body) as { type: string; data: Record<string, any> });

  beforeAll(async () => {
    rx = await receiver();
    ({ rs, stop } = await startCluster(2));
  }, 120_000);

  afterAll(async () => {
    await stop?.();
    await rx?.close();
  });

  /** Every alert raised so far is enqueued (its claim or count answered, its row written). */
  async function settled() {
    for (const r of rs) {
      const gw = r.svc.svc.engines.gateway!;
      await gw.alerts.idle();
      await gw.outbox.deliverDue(); // waits for every enqueue of this replica
    }
  }
  const enqueued = (keyId: string, event: string) => rs[0].svc.svc.db.prisma.webhookDelivery.findMany({ where: { keyId, event } });

  async function withSettings<T>(spec: Record<string, unknown>, fn: () => Promise<T>): Promise<T> {
    await rs[0].svc.svc.store.write([{ op: "upsert", kind: "AlertSettings", name: "default", owner: "config:test", spec }]);
    await everywhere(rs, "AlertSettings", "default", (s) => JSON.stringify(s) === JSON.stringify(spec));
    try {
      return await fn();
    } finally {
      await rs[0].svc.svc.store.write([{ op: "delete", kind: "AlertSettings", name: "default" }]);
    }
  }

  it("rate_limit_percentage: the near-limit warning is sent from the shared bucket, once a minute across replicas", () =>
    withSettings({ rate_limit_percentage: 50 }, async () => {
      const k = await clusterKey(rs, { name: "near", rate_limits: { per_minute: 4 }, webhook: { url: rx.url, events: ["key.limit_exceeded"], secret: "warning-secret-value" } });
      await rs[0].client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg }); // 25% used
      await rs[1].client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg }); // 50% of the shared bucket
      await until(() => hooks().some((h) => h.data.key_id === k.id), 15_000, 100);
      const ev = hooks().find((h) => h.data.key_id === k.id)!;
      expect(ev.type).toBe("key.limit_exceeded");
      expect(ev.data).toMatchObject({ kind: "rate_limit_warning", used_percentage: 50, threshold_percentage: 50, requests_limit: 4, requests_remaining: 2 });
      // 75% on the replica that has not warned yet, 100% on the one that has: no second warning
      await rs[0].client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg });
      await rs[1].client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg });
      await settled();
      expect(await enqueued(k.id, "key.limit_exceeded")).toHaveLength(1);
    }));

  it("failed_auth_threshold: failures on both replicas add up to one key.suspicious_activity", () =>
    withSettings({ failed_auth_threshold: 4 }, async () => {
      const k = await clusterKey(rs, { name: "probed", webhook: { url: rx.url, events: ["key.suspicious_activity"], secret: "suspicious-secret-value" } });
      expect((await rs[0].api("DELETE", `/v1/api-keys/${k.id}`)).status).toBe(200);
      await everywhere(rs, "ApiKey", k.id, (s) => !!s.revoked_at);
      // two on each replica: neither sees 4 alone
      for (const r of [rs[0], rs[1], rs[0], rs[1]]) await expectError(r.client(k.secret).chat.completions.create({ model: "gpt-x", messages: msg }), 401, "key_revoked");
      await settled();
      expect(await enqueued(k.id, "key.suspicious_activity")).toHaveLength(1);
      await until(() => hooks().some((h) => h.data.key_id === k.id), 15_000, 100);
      expect(hooks().find((h) => h.data.key_id === k.id)!).toMatchObject({ type: "key.suspicious_activity", data: { reason: "failed_auth", failures: 4, ip_address: "127.0.0.1" } });
    }));
});
