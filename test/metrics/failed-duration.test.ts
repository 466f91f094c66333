// svc_gateway_request_duration_seconds observes every request that reached a provider
// (docs/operations.md), a failure before the first answer included: an upstream 500 (the client
// gets 502) and a client that leaves while the upstream has not answered. They were left out:
// only an answer that started was observed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, provider, standIn, startEnv, type Env, type StandIn } from "../gateway/fixtures";
import { parse, value } from "./scrape";

let env: Env;
let up: StandIn;
const route = "/v1/chat/completions";
const count = async (model: string) => value(parse(await (await fetch(`${env.url}/metrics`)).text()), "svc_gateway_request_duration_seconds_count", { route, model, provider: "up" }) ?? 0;

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([provider("up", up, [{ name: "gpt-down", upstreamName: "mode:fail500" }, { name: "gpt-hang", upstreamName: "mode:hang" }])]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

describe("the request duration of a call that failed before its answer", () => {
  it("is observed for an upstream failure", async () => {
    const key = await env.key();
    const before = await count("gpt-down");
    await expectError(env.client(key.secret).chat.completions.create({ model: "gpt-down", messages: [{ role: "user", content: "hi" }] }), 502, "upstream_error");
    expect(await count("gpt-down")).toBe(before + 1);
  });

  it("is observed for a client that left while the upstream had not answered", async () => {
    const key = await env.key();
    const before = await count("gpt-hang");
    const ac = new AbortController();
    const res = fetch(`${env.url}${route}`, { method: "POST", signal: ac.signal, headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" }, body: JSON.stringify({ model: "gpt-hang", messages: [{ role: "user", content: "hi" }] }) });
    for (let i = 0; i < 200 && up.hanging === 0; i++) await new Promise((r) => setTimeout(r, 25));
    ac.abort();
    await res.catch(() => undefined);
    for (let i = 0; i < 200 && (await count("gpt-hang")) === before; i++) await new Promise((r) => setTimeout(r, 25));
    expect(await count("gpt-hang")).toBe(before + 1);
  });
});
