// Targets are filtered by policy wherever a provider is chosen: with two providers serving the
// same media model, a key whose policy denies the first is served by the second (at the second's
// price), and a key denied both is refused before anything goes upstream.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, type Env } from "./fixtures";
import { mediaStandin } from "../media/standin";

describe("media calls go to a provider the key's policy allows", () => {
  let env: Env;
  let a: Awaited<ReturnType<typeof mediaStandin>>;
  let b: Awaited<ReturnType<typeof mediaStandin>>;

  beforeAll(async () => {
    env = await startEnv();
    a = await mediaStandin("cred-a");
    b = await mediaStandin("cred-b");
    process.env.SVC_TEST_TARGETS_A = "cred-a";
    process.env.SVC_TEST_TARGETS_B = "cred-b";
    const p = (name: string, up: typeof a, cred: string, perImage: number) => ({
      kind: "Provider",
      name,
      spec: { type: "openai", baseUrl: up.baseUrl, credential: `env:${cred}`, capabilities: ["image_generation"], models: [{ name: "img", perImage }] },
    });
    await env.apply([p("img-a", a, "SVC_TEST_TARGETS_A", 0.01), p("img-b", b, "SVC_TEST_TARGETS_B", 0.02)]);
  }, 60_000);
  afterAll(async () => {
    await env?.stop();
    await a?.close();
    await b?.close();
    delete process.env.SVC_TEST_TARGETS_A;
    delete process.env.SVC_TEST_TARGETS_B;
  });

  const image = async (secret: string) => {
    const r = await fetch(`${env.url}/v1/images/generations`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: JSON.stringify({ model: "img", prompt: "a cat" }) });
    return { status: r.status, json: (await r.json()) as any, job: r.headers.get("x-svc-job-id") };
  };
  const sent = (up: typeof a) => up.seen.filter((s) => s.path === "/v1/images/generations").length;

  it("a key with no policy goes to the first provider; one denied it goes to the second, at its price", async () => {
    const plain = await env.key({});
    expect((await image(plain.secret)).status).toBe(200);
    expect([sent(a), sent(b)]).toEqual([1, 0]);

    const notA = await env.key({
      budget_limits: { total: 1, currency: "USD" },
      policy: { version: "2024-01-01", statements: [{ effect: "Allow", actions: ["*"], resources: ["*"] }, { effect: "Deny", actions: ["*"], resources: ["provider:img-a"] }] },
    });
    const r = await image(notA.secret);
    expect(r.status).toBe(200);
    expect([sent(a), sent(b)]).toEqual([1, 1]);
    const job = await env.svc.svc.db.prisma.mediaJob.findUnique({ where: { id: r.job! } });
    expect(job?.provider).toBe("img-b");
    expect((await env.api("GET", `/v1/api-keys/${notA.id}`)).json.usage.total.spend_usd).toBeCloseTo(0.02, 9);
  });

  it("a key denied both providers is refused 403 before anything goes upstream, and audited", async () => {
    const none = await env.key({ policy: { version: "2024-01-01", statements: [{ effect: "Deny", actions: ["*"], resources: ["provider:img-a", "provider:img-b"] }] } });
    const before = sent(a) + sent(b);
    const r = await image(none.secret);
    expect([r.status, r.json.error.code]).toEqual([403, "policy_denied"]);
    expect(sent(a) + sent(b)).toBe(before);
    const page = await env.gw.audit.query({ keyIds: [none.id] });
    expect(page.data.map((e) => [e.action, e.status])).toEqual([["media.images.generations", "policy_denied"]]);
  });
});
