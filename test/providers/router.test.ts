// The router through svc: a model served by several deployments (Providers) with weights and a
// strategy; retries, backoff, cooldowns; what /metrics and `svc status` show. The deployments are
// the OpenAI-shaped stand-in of the gateway tests (its upstream model "mode:<m>" picks a failure).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, standIn, type Env, type StandIn } from "../gateway/fixtures";
import { until } from "../helpers/http";
import { runCli } from "../helpers/cli";
import { azureStandIn } from "./standins/azure";
import { geminiStandIn } from "./standins/gemini";

let env: Env;
let a: StandIn;
let b: StandIn;
let az: Awaited<ReturnType<typeof azureStandIn>>;
let gm: Awaited<ReturnType<typeof geminiStandIn>>;

const dep = (name: string, up: StandIn, model: string, upstreamName: string, weight: number | undefined, routing?: Record<string, unknown>) => ({
  kind: "Provider",
  name,
  spec: { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 60, models: [{ name: model, upstreamName, inputPerMillion: 1, outputPerMillion: 1, ...(weight !== undefined ? { weight } : {}) }], ...(routing ? { routing } : {}) },
});

const chat = (model: string, body: Record<string, unknown> = {}, signal?: AbortSignal) =>
  fetch(`${env.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], ...body }), signal });

const upstream = (s: StandIn, model: string) => s.requests.filter((r) => r.body.model === model).length;

async function metric(name: string, provider: string): Promise<number | undefined> {
  const text = await (await fetch(`${env.url}/metrics`)).text();
  const m = new RegExp(`^${name}\\{[^}]*provider="${provider}"[^}]*\\} (\\S+)$`, "m").exec(text);
  return m ? Number(m[1]) : undefined;
}

beforeAll(async () => {
  a = await standIn();
  b = await standIn();
  az = await azureStandIn({ apiKey: "router-azure-right-key", deployments: ["gpt"] });
  gm = await geminiStandIn({ apiKey: "router-gemini-key-0123", models: ["gemini-2.0-flash"] });
  process.env.RT_AZURE_WRONG = "router-azure-wrong-key";
  process.env.RT_GEMINI = "router-gemini-key-0123";
  env = await startEnv();
  await env.apply([
    // one model on two vendors: the cheap one (Azure) refuses svc's key, the other serves
    {
      kind: "Provider",
      name: "mx-azure",
      spec: { type: "azure-openai", baseUrl: az.origin, credential: "env:RT_AZURE_WRONG", deployments: { mixed: "gpt" }, models: [{ name: "mixed", inputPerMillion: 1, outputPerMillion: 1 }], routing: { strategy: "cost-optimized", maxAttempts: 2, backoffMs: 0 } },
    },
    { kind: "Provider", name: "mx-gemini", spec: { type: "gemini", baseUrl: `${gm.origin}/v1beta`, credential: "env:RT_GEMINI", models: [{ name: "mixed", upstreamName: "gemini-2.0-flash", inputPerMillion: 5, outputPerMillion: 5 }] } },
    dep("w-a", a, "weighted", "w-a", 3),
    dep("w-b", b, "weighted", "w-b", 1),
    dep("c-a", a, "cooled", "mode:rate429", 1, { maxAttempts: 2, backoffMs: 0 }),
    dep("c-b", b, "cooled", "c-b", 1),
    dep("lb-a", a, "busy", "mode:hang", undefined, { strategy: "least-busy" }),
    dep("lb-b", b, "busy", "mode:hang", undefined),
    dep("r-a", a, "retried", "mode:fail500", 1, { maxAttempts: 3, backoffMs: 1, cooldown: { failures: 100 } }),
    dep("r-b", b, "retried", "mode:fail500", 1, { cooldown: { failures: 100 } }),
    dep("r4-a", a, "refused", "mode:fail400", 1, { maxAttempts: 3, backoffMs: 1 }),
    dep("r4-b", b, "refused", "mode:fail400", 1),
    dep("m-a", a, "midstream", "mode:midstream", 1, { maxAttempts: 3, backoffMs: 1 }),
    dep("m-b", b, "midstream", "mode:midstream", 1),
    dep("solo", a, "solo", "mode:rate429", undefined, { maxAttempts: 3, backoffMs: 0, maxWaitMs: 0 }),
  ]);
});
afterAll(async () => {
  await env?.stop();
  await a?.close();
  await b?.close();
  await az?.close();
  await gm?.close();
});

describe("router", () => {
  it("honours weights 3:1 over 1,000 requests (within 6 binomial standard deviations)", async () => {
    const N = 1000;
    for (let i = 0; i < N; i += 10) {
      const rs = await Promise.all(Array.from({ length: 10 }, () => chat("weighted")));
      expect(rs.map((r) => r.status)).toEqual(Array(10).fill(200));
      await Promise.all(rs.map((r) => r.arrayBuffer()));
    }
    const na = upstream(a, "w-a");
    const nb = upstream(b, "w-b");
    expect(na + nb).toBe(N);
    const sd = Math.sqrt(N * 0.75 * 0.25); // ≈ 13.7: a 6 sd miss happens about once in 500 million runs
    expect(Math.abs(na - 0.75 * N)).toBeLessThan(6 * sd);
  });

  it("moves traffic off a deployment answering 429 and cools it down for its Retry-After", async () => {
    for (let i = 0; i < 20; i++) {
      const r = await chat("cooled");
      expect(r.status).toBe(200);
      expect(((await r.json()) as any).choices[0].message.content).toBe("echo: hi");
    }
    // c-a was tried at most once: its 429 (Retry-After: 7) cooled it; c-b served all 20
    expect(upstream(a, "mode:rate429")).toBe(1);
    expect(upstream(b, "c-b")).toBe(20);
    expect(await metric("svc_router_deployment_cooldown_seconds", "c-a")).toBeGreaterThan(5);
    expect(await metric("svc_router_deployment_cooldown_seconds", "c-b")).toBe(0);
    expect(await metric("svc_router_deployment_failures_total", "c-a")).toBe(1);

    // svc status shows the same
    const st = await runCli(["status"], { SVC_HOME: env.home, SVC_PORT: String(env.svc.port) });
    expect(st.code).toBe(0);
    const rows = st.stdout.split("\n");
    expect(rows).toContain("Load-balanced deployments:");
    expect(rows.find((l) => /^cooled\s+c-a\s/.test(l))).toMatch(/^cooled\s+c-a\s+weighted\s+1\s+0\s+1\s+1\s+-\s+cooling down \d+s$/);
    expect(rows.find((l) => /^cooled\s+c-b\s/.test(l))).toMatch(/^cooled\s+c-b\s+weighted\s+1\s+0\s+20\s+0\s+\d+ms\s+in service$/);
  });

  it("least-busy spreads concurrent requests evenly and releases them when they end", async () => {
    const ctl = new AbortController();
    const pending = Array.from({ length: 10 }, () => chat("busy", {}, ctl.signal).catch(() => undefined));
    await until(() => a.hanging + b.hanging === 10);
    expect([a.hanging, b.hanging]).toEqual([5, 5]);
    expect(await metric("svc_router_deployment_in_flight", "lb-a")).toBe(5);
    ctl.abort();
    await Promise.all(pending);
    await until(() => a.hanging + b.hanging === 0);
    const end = Date.now() + 10_000;
    while (((await metric("svc_router_deployment_in_flight", "lb-a")) !== 0 || (await metric("svc_router_deployment_in_flight", "lb-b")) !== 0) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect([await metric("svc_router_deployment_in_flight", "lb-a"), await metric("svc_router_deployment_in_flight", "lb-b")]).toEqual([0, 0]);
  });

  it("retries 5xx at most maxAttempts times in all, and never a request the provider refused (400)", async () => {
    const r = await chat("retried");
    expect(r.status).toBe(502);
    expect(((await r.json()) as any).error.code).toBe("upstream_error");
    expect(upstream(a, "mode:fail500") + upstream(b, "mode:fail500")).toBe(3);
    const r4 = await chat("refused");
    expect(r4.status).toBe(400);
    expect(upstream(a, "mode:fail400") + upstream(b, "mode:fail400")).toBe(1);
  });

  it("never retries once part of a stream was sent to the client", async () => {
    const r = await chat("midstream", { stream: true });
    expect(r.status).toBe(200);
    const text = await r.text().catch(() => "");
    // the answer's first pieces reached the client, then the failure as an error event
    expect(text).toContain('"content":"echo: "');
    expect(text).toMatch(/"code":"upstream_error"/);
    expect(text).toMatch(/connection to provider m-[ab] failed mid-response/);
    expect(upstream(a, "mode:midstream") + upstream(b, "mode:midstream")).toBe(1);
  });

  it("balances one model across vendor types: cost-optimized tries Azure first, its refusal moves the request to Gemini", async () => {
    const k = await env.key();
    const r = await env.client(k.secret).chat.completions.create({ model: "mixed", messages: [{ role: "user", content: "hi" }] });
    expect(r.choices[0].message.content).toBe("echo: hi");
    expect([az.requests.length, gm.requests.length]).toEqual([1, 1]);
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    expect(page.data[0]).toMatchObject({ provider: "mx-gemini", status: "success", tokens: { prompt: 11, completion: 7 } });
    expect(page.data[0].cost_usd).toBeCloseTo((11 * 5 + 7 * 5) / 1e6, 12); // Gemini's price, not Azure's
  });

  it("when every deployment is cooling down: the upstream's 429, then 503 with Retry-After", async () => {
    const r1 = await chat("solo");
    expect(r1.status).toBe(429);
    expect(upstream(a, "mode:rate429")).toBe(2); // one from the cooldown test, one now: no retry into the cooldown
    const r2 = await chat("solo");
    expect(r2.status).toBe(503);
    expect(((await r2.json()) as any).error.code).toBe("model_unavailable");
    expect(Number(r2.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(upstream(a, "mode:rate429")).toBe(2);
  });
});
