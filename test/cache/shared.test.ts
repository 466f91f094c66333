// The response cache in shared mode (docs/cache.md): replicas share one Redis, so an answer
// stored by replica A answers replica B; Redis stopped mid-load turns lookups into misses, never
// into errors. A purge reaches every replica's memory; hit and miss counts are summed in Redis.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { missingServices } from "../helpers/services";
import { provider, standIn, type StandIn } from "../gateway/fixtures";
import { clusterKey, everywhere, startReplica, startShared, tally, type Replica, type Shared } from "../scale/cluster";

const missing = missingServices();
if (missing) console.warn(`test/cache shared mode skipped: ${missing}`);

describe.skipIf(!!missing)("response cache shared by replicas (Redis)", () => {
  let shared: Shared;
  let up: StandIn;
  const rs: Replica[] = [];
  let secret: string;

  beforeAll(async () => {
    shared = await startShared();
    up = await standIn();
    for (let i = 0; i < 2; i++) rs.push(await startReplica());
    const spec = provider("up", up, [{ name: "gpt-c", inputPerMillion: 1, outputPerMillion: 1, cache: { scope: "organization" } } as any]).spec;
    await rs[0].svc.svc.store.write([{ op: "upsert", kind: "Provider", name: "up", owner: "config:test", spec }]);
    await everywhere(rs, "Provider", "up");
    secret = (await clusterKey(rs, { name: "c", key_type: "organization", organization_id: "o" })).secret;
  }, 120_000);

  afterAll(async () => {
    for (const r of rs) await r.svc.stop().catch(() => undefined);
    await up?.close();
    await shared?.stop();
  });

  const ask = (r: Replica, text: string) => r.client(secret).chat.completions.create({ model: "gpt-c", messages: [{ role: "user", content: text }] }).withResponse();

  it("an answer stored on replica A is a hit on replica B", async () => {
    const a = await ask(rs[0], "shared");
    expect(a.response.headers.get("x-svc-cache")).toBe("miss");
    // the store is written once the answer is complete, without holding it back: wait for it
    let b = await ask(rs[1], "shared");
    for (let i = 0; i < 20 && b.response.headers.get("x-svc-cache") !== "hit"; i++) b = await ask(rs[1], "shared");
    expect(b.response.headers.get("x-svc-cache")).toBe("hit");
    expect(b.data.choices[0].message.content).toBe(a.data.choices[0].message.content);
    expect(up.requests.filter((q) => q.body.messages?.[0]?.content === "shared").length).toBe(1);
  });

  it("a purge on replica A drops the answer replica B keeps in memory", async () => {
    expect((await ask(rs[1], "shared")).response.headers.get("x-svc-cache")).toBe("hit");
    // Redis hands the purge to subscribers before it answers A, so B has it before the next request
    expect(await rs[0].svc.svc.engines.gateway!.cache.purge({ model: "gpt-c" })).toBeGreaterThan(0);
    expect((await ask(rs[1], "shared")).response.headers.get("x-svc-cache")).toBe("miss");
  });

  it("hit and miss counts are the cluster's: replica A reports the hit served by replica B", async () => {
    const cache = rs[0].svc.svc.engines.gateway!.cache;
    expect(cache.counters().hits).toBe(0); // A itself served no hit
    // B adds its counts to Redis once a second; A's stats read the cluster's totals
    let st = await cache.stats();
    for (let i = 0; i < 40 && st.hits < 1; i++) st = await new Promise((r) => setTimeout(r, 100)).then(() => cache.stats());
    expect(st.hits).toBeGreaterThanOrEqual(1);
    expect(st.misses).toBeGreaterThanOrEqual(1);
    expect(st.models["gpt-c"].hits).toBe(st.hits);
    expect(cache.totals().hits).toBe(st.hits);
  });

  it("Redis stopped mid-load: misses, no 5xx", async () => {
    const results: PromiseSettledResult<Awaited<ReturnType<typeof ask>>>[] = [];
    const load = Array.from({ length: 30 }, (_, i) => ask(rs[i % 2], i % 3 === 0 ? "shared" : `load ${i % 5}`));
    await Promise.race(load);
    await shared.redis.kill();
    results.push(...(await Promise.allSettled(load)));
    expect(tally(results)).toEqual({ ok: 30 });
    const after = await ask(rs[1], "shared");
    expect(after.response.status).toBe(200);
    expect(after.response.headers.get("x-svc-cache")).toBe("miss");
  });
});
