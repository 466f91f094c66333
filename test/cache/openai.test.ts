// The response cache on the OpenAI routes (docs/cache.md): a second identical request is answered
// from the cache without an upstream call, streamed or not, parsed by the official SDK; different
// sampling, tools or scope miss; no-store and metadata opt-outs bypass; TTL and max-age expire;
// a hit is admitted by the gate, free against budgets, and audited with `cache: hit`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provider, standIn, startEnv, type Env, type StandIn } from "../gateway/fixtures";

let env: Env;
let up: StandIn;
let secret: string;
let keyId: string;

const cached = (name: string, cache: Record<string, unknown>) => ({ name, inputPerMillion: 1_000_000, outputPerMillion: 1_000_000, cache });

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([
    provider("up", up, [
      cached("gpt-cached", {}),
      cached("gpt-org", { scope: "organization" }),
      cached("gpt-short", { ttlSeconds: 1 }),
      cached("gpt-tiny", { maxEntries: 2 }),
      { name: "gpt-plain", inputPerMillion: 1, outputPerMillion: 1 },
    ]),
  ]);
  const k = await env.key({ budget_limits: { daily: 1000 } });
  secret = k.secret;
  keyId = k.id;
});

afterAll(async () => {
  await env?.stop();
  await up?.close();
});

const calls = (model: string) => up.requests.filter((r) => r.body.model === model).length;
const ask = (text: string) => [{ role: "user" as const, content: text }];

async function spendToday(): Promise<number> {
  return (await env.api("GET", `/v1/api-keys/${keyId}`)).json.usage.today.spend;
}

describe("response cache, OpenAI chat", () => {
  it("answers a second identical request from the cache, free, audited as a hit", async () => {
    const c = env.client(secret);
    const first = await c.chat.completions.create({ model: "gpt-cached", messages: ask("one"), temperature: 0.2 }).withResponse();
    expect(first.response.headers.get("x-svc-cache")).toBe("miss");
    const spent = await spendToday();
    expect(spent).toBeGreaterThan(0);
    const second = await c.chat.completions.create({ model: "gpt-cached", messages: ask("one"), temperature: 0.2 }).withResponse();
    expect(second.response.headers.get("x-svc-cache")).toBe("hit");
    expect(second.data.choices[0].message.content).toBe(first.data.choices[0].message.content);
    expect(second.data.usage).toEqual(first.data.usage);
    expect(calls("gpt-cached")).toBe(1);
    expect(await spendToday()).toBe(spent); // a hit costs nothing against the budget
    const res = await fetch(`${env.url}/v1/audit-logs?limit=2`, { headers: { authorization: `Bearer ${secret}`, "x-api-key-id": keyId } });
    const [hit, miss] = ((await res.json()) as any).data;
    expect(hit.metadata).toMatchObject({ cache: "hit", cache_request_id: miss.request_id });
    expect(miss.metadata?.cache).toBeUndefined();
    expect(hit.status).toBe("success");
  });

  it("replays a streamed answer as the same chunks, usage included, and serves non-streamed from it", async () => {
    const c = env.client(secret);
    const read = async (s: AsyncIterable<any>) => {
      let text = "";
      let usage: unknown;
      for await (const ch of s) {
        text += ch.choices[0]?.delta?.content ?? "";
        if (ch.usage) usage = ch.usage;
      }
      return { text, usage };
    };
    const a = await c.chat.completions.create({ model: "gpt-cached", messages: ask("stream me"), stream: true, stream_options: { include_usage: true } }).withResponse();
    expect(a.response.headers.get("x-svc-cache")).toBe("miss");
    const first = await read(a.data);
    const b = await c.chat.completions.create({ model: "gpt-cached", messages: ask("stream me"), stream: true, stream_options: { include_usage: true } }).withResponse();
    expect(b.response.headers.get("x-svc-cache")).toBe("hit");
    const second = await read(b.data);
    expect(second).toEqual(first);
    expect(first.text).toBe("echo: stream me");
    expect(second.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5 });
    const whole = await c.chat.completions.create({ model: "gpt-cached", messages: ask("stream me") }).withResponse();
    expect(whole.response.headers.get("x-svc-cache")).toBe("hit");
    expect(whole.data.choices[0].message.content).toBe(first.text);
    expect(calls("gpt-cached")).toBe(2);
  });

  it("misses on other sampling settings, tools, seed or response format; a model without a cache sends no header", async () => {
    const c = env.client(secret);
    const base = { model: "gpt-cached", messages: ask("vary") };
    await c.chat.completions.create(base);
    const n = calls("gpt-cached");
    const tool = { type: "function" as const, function: { name: "f", parameters: { type: "object", properties: {} } } };
    for (const extra of [{ temperature: 0.9 }, { top_p: 0.5 }, { seed: 7 }, { max_tokens: 9 }, { tools: [tool] }, { response_format: { type: "json_object" as const } }]) {
      const r = await c.chat.completions.create({ ...base, ...extra }).withResponse();
      expect(r.response.headers.get("x-svc-cache"), JSON.stringify(extra)).toBe("miss");
    }
    expect(calls("gpt-cached")).toBe(n + 6);
    const plain = await c.chat.completions.create({ model: "gpt-plain", messages: ask("vary") }).withResponse();
    expect(plain.response.headers.get("x-svc-cache")).toBeNull();
  });

  it("Cache-Control no-store and metadata.cache bypass it; no-cache refreshes; max-age bounds the age", async () => {
    const c = env.client(secret);
    const base = { model: "gpt-cached", messages: ask("directives") };
    await c.chat.completions.create(base);
    const n = calls("gpt-cached");
    const noStore = await c.chat.completions.create(base, { headers: { "cache-control": "no-store" } }).withResponse();
    expect(noStore.response.headers.get("x-svc-cache")).toBe("bypass");
    const optOut = await c.chat.completions.create({ ...base, metadata: { cache: "no-store" } }).withResponse();
    expect(optOut.response.headers.get("x-svc-cache")).toBe("bypass");
    const noCache = await c.chat.completions.create(base, { headers: { "cache-control": "no-cache" } }).withResponse();
    expect(noCache.response.headers.get("x-svc-cache")).toBe("miss");
    expect(calls("gpt-cached")).toBe(n + 3);
    const young = await c.chat.completions.create(base, { headers: { "cache-control": "max-age=600" } }).withResponse();
    expect(young.response.headers.get("x-svc-cache")).toBe("hit");
    await new Promise((r) => setTimeout(r, 1100));
    const old = await c.chat.completions.create(base, { headers: { "cache-control": "max-age=1" } }).withResponse();
    expect(old.response.headers.get("x-svc-cache")).toBe("miss");
    expect(calls("gpt-cached")).toBe(n + 4);
  });

  it("an entry expires after its TTL", async () => {
    const c = env.client(secret);
    await c.chat.completions.create({ model: "gpt-short", messages: ask("ttl") });
    expect((await c.chat.completions.create({ model: "gpt-short", messages: ask("ttl") }).withResponse()).response.headers.get("x-svc-cache")).toBe("hit");
    await new Promise((r) => setTimeout(r, 1100));
    expect((await c.chat.completions.create({ model: "gpt-short", messages: ask("ttl") }).withResponse()).response.headers.get("x-svc-cache")).toBe("miss");
    expect(calls("gpt-short")).toBe(2);
  });

  it("keeps maxEntries per model, evicting the least recently used", async () => {
    const c = env.client(secret);
    for (const t of ["a", "b", "c"]) await c.chat.completions.create({ model: "gpt-tiny", messages: ask(t) });
    const hit = async (t: string) => (await c.chat.completions.create({ model: "gpt-tiny", messages: ask(t) }).withResponse()).response.headers.get("x-svc-cache");
    expect(await hit("c")).toBe("hit");
    expect(await hit("a")).toBe("miss"); // evicted: the oldest of three
  });

  it("a key never gets another key's (scope key) or another organization's (scope organization) answer", async () => {
    const other = await env.key();
    const c1 = env.client(secret);
    const c2 = env.client(other.secret);
    await c1.chat.completions.create({ model: "gpt-cached", messages: ask("mine") });
    expect((await c2.chat.completions.create({ model: "gpt-cached", messages: ask("mine") }).withResponse()).response.headers.get("x-svc-cache")).toBe("miss");
    const a1 = await env.key({ key_type: "organization", organization_id: "org-a" });
    const a2 = await env.key({ key_type: "team", organization_id: "org-a", team_id: "t" });
    const b1 = await env.key({ key_type: "organization", organization_id: "org-b" });
    await env.client(a1.secret).chat.completions.create({ model: "gpt-org", messages: ask("org") });
    expect((await env.client(a2.secret).chat.completions.create({ model: "gpt-org", messages: ask("org") }).withResponse()).response.headers.get("x-svc-cache")).toBe("hit");
    expect((await env.client(b1.secret).chat.completions.create({ model: "gpt-org", messages: ask("org") }).withResponse()).response.headers.get("x-svc-cache")).toBe("miss");
    expect(calls("gpt-org")).toBe(2);
  });

  it("counts hits and misses in /metrics and /admin/response-cache; purge drops a model's answers", async () => {
    const c = env.client(secret);
    await c.chat.completions.create({ model: "gpt-cached", messages: ask("count") });
    await c.chat.completions.create({ model: "gpt-cached", messages: ask("count") });
    const m = await (await fetch(`${env.url}/metrics`)).text();
    const hits = Number(/svc_gateway_cache_requests_total\{model="gpt-cached",result="hit"\} (\d+)/.exec(m)?.[1]);
    expect(hits).toBeGreaterThanOrEqual(1);
    expect(m).toMatch(/svc_gateway_cache_saved_usd_total\{model="gpt-cached"\} [0-9.e-]+/);
    const stats = (await env.api("GET", "/admin/response-cache")).json;
    expect(stats).toMatchObject({ mode: "sqlite", hits: expect.any(Number), misses: expect.any(Number) });
    expect(stats.entries).toBeGreaterThan(0);
    expect(stats.models.find((x: any) => x.model === "gpt-cached").hits).toBe(hits);
    const usage = (await env.api("GET", "/v1/usage")).json;
    expect(usage.cache).toMatchObject({ hits: stats.hits, misses: stats.misses });
    const purged = await env.api("POST", "/admin/response-cache/purge", { model: "gpt-cached" });
    expect(purged.status).toBe(200);
    expect(purged.json.purged).toBeGreaterThan(0);
    expect((await c.chat.completions.create({ model: "gpt-cached", messages: ask("count") }).withResponse()).response.headers.get("x-svc-cache")).toBe("miss");
    expect((await env.api("POST", "/admin/response-cache/purge", { model: 3 })).status).toBe(400);
  });

  it("a hit is still judged by the gate: a revoked key is refused", async () => {
    const k = await env.key();
    await env.client(k.secret).chat.completions.create({ model: "gpt-cached", messages: ask("gate") });
    expect((await env.api("DELETE", `/v1/api-keys/${k.id}`)).status).toBeLessThan(300);
    await expect(env.client(k.secret).chat.completions.create({ model: "gpt-cached", messages: ask("gate") })).rejects.toMatchObject({ status: 401 });
  });
});
