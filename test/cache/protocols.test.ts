// The response cache on every protocol (docs/cache.md): Anthropic Messages, Responses, text
// completions, the Ollama routes and embeddings. A second identical request is a hit (the
// stand-in sees one call) with the same content, its stream parsed by the official SDK.
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provider, standIn, startEnv, type Env, type StandIn } from "../gateway/fixtures";

let env: Env;
let up: StandIn;
let secret: string;

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([provider("up", up, [{ name: "m", inputPerMillion: 1, outputPerMillion: 1, cache: { scope: "key" } } as any, { name: "e", inputPerMillion: 1, cache: {} } as any])]);
  secret = (await env.key()).secret;
});

afterAll(async () => {
  await env?.stop();
  await up?.close();
});

const calls = () => up.requests.length;

/** Run `f` twice: the second run must reach no upstream and give the same result. */
async function twice<T>(f: () => Promise<T>): Promise<T> {
  const n = calls();
  const first = await f();
  expect(calls()).toBe(n + 1);
  const second = await f();
  expect(calls()).toBe(n + 1);
  expect(second).toEqual(first);
  return second;
}

describe("response cache, every protocol", () => {
  it("Anthropic Messages, whole and streamed (the SDK's stream parser)", async () => {
    const a = new Anthropic({ baseURL: env.url, apiKey: secret, maxRetries: 0 });
    const body = { model: "m", max_tokens: 50, messages: [{ role: "user" as const, content: "anthropic" }] };
    const whole = await twice(async () => {
      const r = await a.messages.create(body);
      return { content: r.content, usage: r.usage, stop: r.stop_reason };
    });
    expect(whole.content).toEqual([expect.objectContaining({ type: "text", text: "echo: anthropic" })]);
    const streamed = await twice(async () => {
      const s = a.messages.stream({ ...body, messages: [{ role: "user", content: "anthropic stream" }] });
      const m = await s.finalMessage();
      return { content: m.content, usage: m.usage, stop: m.stop_reason };
    });
    expect(streamed.content[0]).toMatchObject({ text: "echo: anthropic stream" });
    expect(streamed.usage.output_tokens).toBe(5);
    const h = await a.messages.create({ ...body, messages: [{ role: "user", content: "anthropic stream" }], stream: true }).withResponse();
    expect(h.response.headers.get("x-svc-cache")).toBe("hit");
    for await (const _ of h.data) void _;
  });

  it("OpenAI Responses, whole and streamed", async () => {
    const c = env.client(secret);
    const whole = await twice(async () => (await c.responses.create({ model: "m", input: "responses" })).output_text);
    expect(whole).toBe("echo: responses");
    const streamed = await twice(async () => {
      const s = c.responses.stream({ model: "m", input: "responses stream" });
      const r = await s.finalResponse();
      return { text: r.output_text, usage: r.usage };
    });
    expect(streamed.text).toBe("echo: responses stream");
    expect(streamed.usage).toMatchObject({ input_tokens: 10, output_tokens: 5 });
  });

  it("OpenAI text completions, whole and streamed", async () => {
    const c = env.client(secret);
    await twice(async () => (await c.completions.create({ model: "m", prompt: "complete" })).choices[0].text);
    const text = await twice(async () => {
      let t = "";
      for await (const ch of await c.completions.create({ model: "m", prompt: "complete stream", stream: true })) t += ch.choices[0]?.text ?? "";
      return t;
    });
    expect(text.length).toBeGreaterThan(0);
  });

  it("Ollama chat and generate, whole and streamed (the ollama SDK)", async () => {
    const o = new Ollama({ host: env.url, headers: { authorization: `Bearer ${secret}` } });
    const whole = await twice(async () => (await o.chat({ model: "m", messages: [{ role: "user", content: "ollama" }] })).message.content);
    expect(whole).toBe("echo: ollama");
    const streamed = await twice(async () => {
      let t = "";
      let evals: number | undefined;
      for await (const p of await o.chat({ model: "m", messages: [{ role: "user", content: "ollama stream" }], stream: true })) {
        t += p.message.content;
        if (p.done) evals = p.eval_count;
      }
      return { t, evals };
    });
    expect(streamed).toEqual({ t: "echo: ollama stream", evals: 5 });
    await twice(async () => {
      let t = "";
      for await (const p of await o.generate({ model: "m", prompt: "generate", stream: true })) t += p.response;
      return t;
    });
  });

  it("embeddings: OpenAI and Ollama routes", async () => {
    const c = env.client(secret);
    const v = await twice(async () => (await c.embeddings.create({ model: "e", input: ["alpha", "beta"] })).data.map((d) => d.embedding));
    expect(v[0]).toEqual([5, 0.5, -0.5]);
    const h = await c.embeddings.create({ model: "e", input: ["alpha", "beta"] }).withResponse();
    expect(h.response.headers.get("x-svc-cache")).toBe("hit");
    const o = new Ollama({ host: env.url, headers: { authorization: `Bearer ${secret}` } });
    await twice(async () => (await o.embed({ model: "e", input: "gamma" })).embeddings);
    // another input is another entry
    const n = calls();
    await c.embeddings.create({ model: "e", input: ["delta"] });
    expect(calls()).toBe(n + 1);
  });
});
