// Controllers are the one path from the store to the gateway's engines: the key cache, the policy
// index, the router and the alert settings follow a store write in the same tick, through their
// controllers' projection (controllers/runtime.ts), not by listening to the store themselves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import { ControllerManager } from "../../controllers/runtime";
import { apiKeyController } from "../../controllers/kinds/api-key";
import { providerController } from "../../controllers/kinds/provider";
import { acceptedController } from "../../controllers/kinds/accepted";
import { KeyCache, hashSecret } from "../../engines/gateway/keys";
import { PolicyIndex } from "../../engines/gateway/policy";
import { ProviderRouter } from "../../engines/providers/router";
import { jsonLogger } from "../../api/log";

const quiet = jsonLogger({ write: () => {} });

describe("controllers feed the gateway's engines", () => {
  let env: Env;
  let up: StandIn;

  beforeAll(async () => {
    env = await startEnv();
    up = await standIn();
    await env.apply([
      provider("feed-up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }]),
      { kind: "AccessPolicy", name: "open", spec: { statements: [{ effect: "Allow", actions: ["*"], resources: ["*"] }] } },
    ]);
  }, 60_000);
  afterAll(async () => {
    await env?.stop();
    await up?.close();
  });

  const ask = (secret: string) => env.client(secret).chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] });

  it("deleting an AccessPolicy through apply is seen by the gate in the same tick", async () => {
    const k = await env.key({ policies: ["open"] });
    expect((await ask(k.secret)).choices[0].message.content).toBeTruthy();

    // A listener added now runs after the controller runtime's (added at start): when it runs, the
    // policy is already gone from the index, though no reconcile could have run yet.
    let seenInTick: boolean | undefined;
    env.svc.svc.store.once("change", () => {
      seenInTick = env.gw.policies.has("open");
    });
    await env.svc.svc.store.write([{ op: "delete", kind: "AccessPolicy", name: "open" }]);
    expect(seenInTick).toBe(false);
    const e = await expectError(ask(k.secret), 403, "policy_denied");
    expect(e.message).toContain('access policy "open" bound to this key does not exist');

    // and back: re-applying it lets the key through on its next request
    await env.apply([{ kind: "AccessPolicy", name: "open", spec: { statements: [{ effect: "Allow", actions: ["*"], resources: ["*"] }] } }]);
    expect((await ask(k.secret)).choices[0].message.content).toBeTruthy();
  });

  it("a revoked key and a removed provider are refused on the next request", async () => {
    const k = await env.key();
    expect((await ask(k.secret)).choices[0].message.content).toBeTruthy();
    const r = await env.api("DELETE", `/v1/api-keys/${k.id}`);
    expect(r.status).toBeLessThan(300);
    await expectError(ask(k.secret), 401, "key_revoked");

    const k2 = await env.key();
    await env.svc.svc.store.write([{ op: "delete", kind: "Provider", name: "feed-up" }]);
    await expectError(ask(k2.secret), 404, "model_not_found");
    await env.apply([provider("feed-up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }])]);
    expect((await ask(k2.secret)).choices[0].message.content).toBeTruthy();
  });

  it("alert settings follow their controller", async () => {
    expect(env.gw.alertSettings().rate_limit_percentage).toBe(0); // opt-in: no AlertSettings object
    await env.apply([{ kind: "AlertSettings", name: "alerts", spec: { rate_limit_percentage: 70, failed_auth_threshold: 7 } }]);
    expect(env.gw.alertSettings()).toMatchObject({ rate_limit_percentage: 70, failed_auth_threshold: 7 });
    await env.svc.svc.store.write([{ op: "delete", kind: "AlertSettings", name: "alerts" }]);
    expect(env.gw.alertSettings().rate_limit_percentage).toBe(0);
  });

  it("an engine built without its controller does not see store changes; one fed by a controller does, before any reconcile", async () => {
    const store = env.svc.svc.store;
    const lone = new ProviderRouter(() => undefined);
    const fedKeys = new KeyCache();
    const fedRouter = new ProviderRouter(() => undefined);
    // attached but never started: a replica that does not hold the reconciler lease
    const mgr = new ControllerManager({
      store,
      controllers: [apiKeyController({ keys: fedKeys, policies: new PolicyIndex() }), providerController({ router: fedRouter })],
      fallback: acceptedController(),
      log: quiet,
      resyncMs: 0,
    });
    mgr.attach();
    try {
      expect(fedRouter.targets("gpt-x").map((t) => t.provider)).toEqual(["feed-up"]); // initial load
      await env.apply([
        provider("other-up", up, [{ name: "gpt-y" }]),
        { kind: "ApiKey", name: "key_feedtest0000000000", spec: { key_type: "user", secretHash: `sha256:${hashSecret("feed-secret")}` } },
      ]);
      expect(lone.targets("gpt-y")).toEqual([]);
      expect(fedRouter.targets("gpt-y").map((t) => t.provider)).toEqual(["other-up"]);
      expect(fedKeys.authenticate("feed-secret").ok).toBe(true);
      mgr.detach();
      await store.write([{ op: "delete", kind: "Provider", name: "other-up" }]);
      expect(fedRouter.targets("gpt-y").map((t) => t.provider)).toEqual(["other-up"]); // detached: no longer fed
      expect(env.gw.router.targets("gpt-y")).toEqual([]); // the running svc's router is
    } finally {
      mgr.detach();
      await mgr.stop();
    }
  });

  it("a controller's watches re-queue its objects when a watched kind changes (no store listener of its own)", async () => {
    const store = env.svc.svc.store;
    const seen: string[] = [];
    const mgr = new ControllerManager({
      store,
      controllers: [{ kind: "Widget", watches: ["Provider"], reconcile: async (o) => (seen.push(o.name), { status: "True", reason: "Ok", message: "" }) }],
      fallback: acceptedController(),
      log: quiet,
      resyncMs: 0,
    });
    await store.write([{ op: "upsert", kind: "Widget", name: "w1", owner: "config:test", spec: {} }]);
    mgr.start();
    try {
      await mgr.idle();
      expect(seen).toEqual(["w1"]);
      await env.apply([provider("watched-up", up, [{ name: "gpt-w" }])]);
      await mgr.idle();
      expect(seen).toEqual(["w1", "w1"]);
      await env.apply([{ kind: "AlertSettings", name: "unwatched", spec: {} }]);
      await mgr.idle();
      expect(seen).toEqual(["w1", "w1"]);
    } finally {
      await mgr.stop();
      mgr.detach();
      await store.write([{ op: "delete", kind: "Widget", name: "w1" }, { op: "delete", kind: "AlertSettings", name: "unwatched" }]);
    }
  });

  it("no engine subscribes to the store's change events", () => {
    const root = path.resolve(__dirname, "../../engines");
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const f of readdirSync(dir)) {
        const p = path.join(dir, f);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith(".ts") && /\.on\(\s*["']change["']/.test(readFileSync(p, "utf8"))) offenders.push(path.relative(root, p));
      }
    };
    walk(root);
    expect(offenders).toEqual([]);
  });
});
