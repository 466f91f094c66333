// The embedded response cache survives a restart of the server: an answer stored before `svc`
// stopped answers the same request after it started again on the same data dir (the in-memory
// tier starts empty, so the hit is read back from cache.sqlite), without an upstream call.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provider, standIn, startEnv, type Env, type StandIn } from "../gateway/fixtures";

let env: Env | undefined;
let up: StandIn;

beforeAll(async () => {
  up = await standIn();
});

afterAll(async () => {
  await env?.stop();
  await up?.close();
});

describe("response cache across a restart (embedded)", () => {
  it("a request answered before the restart is a hit after it", async () => {
    env = await startEnv();
    await env.apply([provider("up", up, [{ name: "gpt-kept", inputPerMillion: 1, outputPerMillion: 1, cache: {} } as any])]);
    const k = await env.key();
    const ask = () => env!.client(k.secret).chat.completions.create({ model: "gpt-kept", messages: [{ role: "user", content: "kept" }] }).withResponse();
    const before = await ask();
    expect(before.response.headers.get("x-svc-cache")).toBe("miss");
    const home = env.home;
    await env.stop();
    env = await startEnv({ home }); // the Provider and the key are in the store of that data dir
    const after = await ask();
    expect(after.response.headers.get("x-svc-cache")).toBe("hit");
    expect(after.data.choices[0].message.content).toBe(before.data.choices[0].message.content);
    expect(up.requests.filter((r) => r.body.model === "gpt-kept").length).toBe(1);
    expect((await env.api("GET", "/admin/response-cache")).json).toMatchObject({ mode: "sqlite", hits: 1, misses: 0 });
  });
});
