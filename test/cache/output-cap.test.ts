// The cache key holds max_tokens (docs/cache.md "What makes two requests the same"). A key with
// token_limits.per_request_max that sends no max_tokens has its output capped by the gateway
// (docs/gateway.md: the request is sent upstream with max_tokens = per_request_max - prompt), so
// its answer may be cut short (finish_reason "length"): another key of the scope that sets no
// cap must not be answered with it, and the other way round.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provider, standIn, startEnv, type Env, type StandIn } from "../gateway/fixtures";

let env: Env;
let up: StandIn;

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([provider("up", up, [{ name: "gpt-capped", inputPerMillion: 1, outputPerMillion: 1, cache: { scope: "organization" } } as any])]);
});

afterAll(async () => {
  await env?.stop();
  await up?.close();
});

const ask = (secret: string, text: string) => env.client(secret).chat.completions.create({ model: "gpt-capped", messages: [{ role: "user", content: text }] }).withResponse();
const sent = (text: string) => up.requests.filter((r) => r.body.model === "gpt-capped" && r.body.messages?.[0]?.content === text);

describe("response cache and the gateway's output cap", () => {
  it("an answer capped by per_request_max never answers a key of the scope without the cap", async () => {
    const capped = await env.key({ key_type: "organization", organization_id: "cap-org", token_limits: { per_request_max: 200 } });
    const free = await env.key({ key_type: "team", organization_id: "cap-org", team_id: "t" });
    expect((await ask(capped.secret, "capped question")).response.headers.get("x-svc-cache")).toBe("miss");
    expect(sent("capped question")[0].body.max_tokens).toBeGreaterThan(0); // the gateway capped it
    const r = await ask(free.secret, "capped question");
    expect(r.response.headers.get("x-svc-cache")).toBe("miss");
    expect(sent("capped question").length).toBe(2);
    expect(sent("capped question")[1].body.max_tokens).toBeUndefined();
    // each is answered from its own entry afterwards
    expect((await ask(free.secret, "capped question")).response.headers.get("x-svc-cache")).toBe("hit");
    expect((await ask(capped.secret, "capped question")).response.headers.get("x-svc-cache")).toBe("hit");
    expect(sent("capped question").length).toBe(2);
  });

  it("an uncapped answer never answers the capped key", async () => {
    const capped = await env.key({ key_type: "organization", organization_id: "cap-org2", token_limits: { per_request_max: 200 } });
    const free = await env.key({ key_type: "team", organization_id: "cap-org2", team_id: "t" });
    expect((await ask(free.secret, "free question")).response.headers.get("x-svc-cache")).toBe("miss");
    expect((await ask(capped.secret, "free question")).response.headers.get("x-svc-cache")).toBe("miss");
    expect(sent("free question").length).toBe(2);
  });
});
