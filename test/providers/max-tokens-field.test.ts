// The output bound goes upstream under the name the OpenAI client gave it: max_completion_tokens
// (OpenAI's newer field, the only one its reasoning models accept; they answer 400 to max_tokens)
// stays max_completion_tokens, and max_tokens stays max_tokens (older OpenAI-compatible servers
// know only that one). Through svc to a loopback stand-in of an OpenAI-compatible provider.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import OpenAI from "openai";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";

describe("the output bound's field name upstream", () => {
  let env: Env;
  let up: StandIn;

  beforeAll(async () => {
    up = await standIn();
    env = await startEnv();
    await env.apply([provider("p", up, [{ name: "reasoner" }])]);
  });
  afterAll(async () => {
    await env?.stop();
    await up?.close();
  });

  const sent = async (bound: Record<string, number>, stream = false) => {
    const k = await env.key();
    const client = new OpenAI({ apiKey: k.secret, baseURL: `${env.url}/v1` });
    const n = up.requests.length;
    const body = { model: "reasoner", messages: [{ role: "user" as const, content: "hi" }], ...bound };
    if (stream) for await (const _ of await client.chat.completions.create({ ...body, stream: true })) void _;
    else await client.chat.completions.create(body);
    return up.requests[n].body as Record<string, unknown>;
  };

  it("max_completion_tokens is sent as max_completion_tokens, streamed or not", async () => {
    for (const stream of [false, true]) {
      const b = await sent({ max_completion_tokens: 64 }, stream);
      expect(b.max_completion_tokens).toBe(64);
      expect(b).not.toHaveProperty("max_tokens");
    }
  });

  it("max_tokens is sent as max_tokens", async () => {
    const b = await sent({ max_tokens: 32 });
    expect(b.max_tokens).toBe(32);
    expect(b).not.toHaveProperty("max_completion_tokens");
  });
});
