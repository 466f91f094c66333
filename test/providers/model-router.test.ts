// The router declared on a Model (spec.router): one public model name, its deployments across
// Providers with weights, and strategy / retries / cooldown in one place; served, listed, shown
// in `svc status` and /metrics like the Provider-level groups (router.test.ts). The deployments
// are the OpenAI-shaped stand-in of the gateway tests (upstream model "mode:<m>" picks a failure).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, standIn, type Env, type StandIn } from "../gateway/fixtures";
import { until } from "../helpers/http";
import { runCli } from "../helpers/cli";
import { validateDocument } from "../../manifests/validate";

let env: Env;
let a: StandIn;
let b: StandIn;

const chat = (model: string) =>
  fetch(`${env.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }) });

const upstream = (s: StandIn, model: string) => s.requests.filter((r) => r.body.model === model).length;

async function metric(name: string, model: string, provider: string): Promise<number | undefined> {
  const text = await (await fetch(`${env.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(`model="${model}"`) && l.includes(`provider="${provider}"`));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : undefined;
}

const ready = (name: string) => env.svc.svc.store.get("Model", name)?.status.conditions?.find((c) => c.type === "Ready");

beforeAll(async () => {
  a = await standIn();
  b = await standIn();
  env = await startEnv();
  const price = { inputPerMillion: 1, outputPerMillion: 1 };
  await env.apply([
    { kind: "Provider", name: "pa", spec: { type: "openai", baseUrl: a.baseUrl, timeoutSeconds: 30, models: [{ name: "gpt-a", upstreamName: "ma", ...price }, { name: "gpt-a-500", upstreamName: "mode:fail500", ...price }] } },
    {
      kind: "Provider",
      name: "pb",
      spec: { type: "openai", baseUrl: b.baseUrl, timeoutSeconds: 30, models: [{ name: "gpt-b", upstreamName: "mb", ...price }, { name: "gpt-b2", upstreamName: "mb2", ...price }, { name: "cool-b", upstreamName: "cb", ...price }] },
    },
    { kind: "Model", name: "team-gpt", spec: { aliases: ["team-gpt-latest"], router: { deployments: [{ provider: "pa", model: "gpt-a", weight: 3 }, { provider: "pb", model: "gpt-b", weight: 1 }] } } },
    {
      kind: "Model",
      name: "team-cool",
      spec: { router: { strategy: "least-busy", maxAttempts: 2, backoffMs: 0, cooldown: { failures: 2, windowSeconds: 60, seconds: 120 }, deployments: [{ provider: "pa", model: "gpt-a-500" }, { provider: "pb", model: "cool-b" }] } },
    },
    { kind: "Model", name: "team-dup", spec: { router: { deployments: [{ provider: "pb", model: "gpt-b" }, { provider: "pb", model: "gpt-b2", weight: 0 }] } } },
    { kind: "Model", name: "team-missing", spec: { router: { deployments: [{ provider: "nowhere", model: "gpt-x" }] } } },
  ]);
  await until(() => ready("team-gpt")?.status === "True" && ready("team-missing") !== undefined);
});
afterAll(async () => {
  await env?.stop();
  await a?.close();
  await b?.close();
});

describe("a router declared on a Model", () => {
  it("honours its weights 3:1 over 1,000 requests (within 6 binomial standard deviations), under its name and alias", async () => {
    const N = 1000;
    for (let i = 0; i < N; i += 10) {
      const rs = await Promise.all(Array.from({ length: 10 }, (_, j) => chat(j % 2 ? "team-gpt" : "team-gpt-latest")));
      expect(rs.map((r) => r.status)).toEqual(Array(10).fill(200));
      await Promise.all(rs.map((r) => r.arrayBuffer()));
    }
    const na = upstream(a, "ma");
    const nb = upstream(b, "mb");
    expect(na + nb).toBe(N);
    expect(Math.abs(na - 0.75 * N)).toBeLessThan(6 * Math.sqrt(N * 0.75 * 0.25));
    expect(await metric("svc_router_deployment_weight", "team-gpt", "pa")).toBe(3);
    expect(await metric("svc_router_deployment_requests_total", "team-gpt", "pb")).toBe(nb);
  });

  it("retries a failing deployment's requests on the other and cools it down after the declared failures for the declared time; status and metrics show it", async () => {
    for (let i = 0; i < 20; i++) {
      const r = await chat("team-cool");
      expect(r.status).toBe(200);
      expect(((await r.json()) as any).choices[0].message.content).toBe("echo: hi");
    }
    // pa answered 500 twice (each request moved to pb), then cooldown.failures=2 cooled it
    expect(upstream(a, "mode:fail500")).toBe(2);
    expect(upstream(b, "cb")).toBe(20);
    expect(await metric("svc_router_deployment_cooldown_seconds", "team-cool", "pa")).toBeGreaterThan(100);
    expect(await metric("svc_router_deployment_cooldown_seconds", "team-cool", "pb")).toBe(0);
    expect(await metric("svc_router_deployment_failures_total", "team-cool", "pa")).toBe(2);

    const st = await runCli(["status"], { SVC_HOME: env.home, SVC_PORT: String(env.svc.port) });
    expect(st.code).toBe(0);
    const rows = st.stdout.split("\n");
    expect(rows).toContain("Load-balanced deployments:");
    expect(rows.find((l) => /^team-cool\s+pa\s/.test(l))).toMatch(/^team-cool\s+pa\s+least-busy\s+1\s+0\s+2\s+2\s+-\s+cooling down 1\d\ds$/);
    expect(rows.find((l) => /^team-cool\s+pb\s/.test(l))).toMatch(/^team-cool\s+pb\s+least-busy\s+1\s+0\s+20\s+0\s+\d+ms\s+in service$/);
    expect(rows.find((l) => l.startsWith("Model/team-cool"))).toMatch(/True\s+Routed\s+\S+\s+load-balanced over 2 of 2 deployments/);
  });

  it("two deployments on one Provider are told apart; weight 0 is standby", async () => {
    for (let i = 0; i < 5; i++) expect((await chat("team-dup")).status).toBe(200);
    expect(upstream(b, "mb2")).toBe(0);
    expect(await metric("svc_router_deployment_weight", "team-dup", "pb/gpt-b")).toBe(1);
    expect(await metric("svc_router_deployment_weight", "team-dup", "pb/gpt-b2")).toBe(0);
  });

  it("is listed by its names; a router whose deployments do not exist is not Ready and not served", async () => {
    const k = await env.key();
    const ids = (await env.client(k.secret).models.list()).data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(["team-gpt", "team-gpt-latest", "team-cool"]));
    expect(ids).not.toContain("team-missing");
    // issue 38: a Provider that is not there at all is named as missing (was "does not list model gpt-x")
    expect(ready("team-missing")).toMatchObject({ status: "False", reason: "NoDeployment", message: "Provider nowhere does not exist (apply a Provider named nowhere, or change this deployment's provider)" });
    const r = await chat("team-missing");
    expect(r.status).toBe(404);
    expect(((await r.json()) as any).error.code).toBe("model_not_found");
    // nor is a routed Model among the local models of the runtime settings
    const rs = await env.api("GET", "/admin/runtime-settings");
    expect(rs.status).toBe(200);
    expect(rs.json.threads.models.map((m: any) => m.name)).not.toContain("team-gpt");
  });

  it("the manifest takes file or router, not both, not neither", () => {
    const doc = (spec: Record<string, unknown>) => ({ apiVersion: "svc/v1", kind: "Model", metadata: { name: "m" }, spec });
    const router = { deployments: [{ provider: "pa", model: "gpt-a" }] };
    expect(validateDocument("Model", doc({ router }))).toEqual([]);
    expect(validateDocument("Model", doc({ file: "x.gguf" }))).toEqual([]);
    expect(validateDocument("Model", doc({ file: "x.gguf", router }))).toEqual([{ path: "/spec/file", message: "must be left out: a Model with router is served by its deployments, not a file" }]);
    expect(validateDocument("Model", doc({}))).toEqual([{ path: "/spec", message: 'missing required field "file"' }]);
    expect(validateDocument("Model", doc({ router: { deployments: [] } })).length).toBeGreaterThan(0);
  });
});
