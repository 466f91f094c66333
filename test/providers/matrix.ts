// The must-show matrix for one provider type: the official openai, @anthropic-ai/sdk and ollama
// clients through svc to a vendor stand-in, non-streaming and streaming, text and a tool call
// (forced where the protocol can force one; Ollama has no tool_choice, so its model is asked
// about the weather), each with its usage and cost in the key's audit log; and a wrong credential
// at the stand-in surfacing as svc's 502 naming the provider, the credential nowhere in it.
import { expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import { expectError, type Env } from "../gateway/fixtures";
import { COMPLETION_TOKENS, PROMPT_TOKENS, TOOL_ARGS } from "./standins/common";

export interface MatrixCtx {
  env: Env;
  /** model name clients ask for */
  model: string;
  /** the Provider serving it */
  provider: string;
  /** USD per million tokens configured on it */
  price: { input: number; output: number };
  /** a model served by a Provider whose credential the stand-in refuses, and that credential */
  badModel: string;
  badProvider: string;
  badSecret: string;
}

export const WEATHER_TOOL = {
  name: "get_weather",
  description: "Current weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
};

const clients = (c: MatrixCtx, secret: string) => ({
  openai: c.env.client(secret),
  anthropic: new Anthropic({ baseURL: c.env.url, apiKey: secret, maxRetries: 0 }),
  ollama: new Ollama({ host: c.env.url, headers: { authorization: `Bearer ${secret}` } }),
});

async function expectAudited(c: MatrixCtx, keyId: string, n: number, action: string) {
  const page = await c.env.gw.audit.query({ keyIds: [keyId] });
  expect(page.data.length).toBe(n);
  const e = page.data[0];
  expect(e).toMatchObject({ model: c.model, provider: c.provider, status: "success", action, tokens: { prompt: PROMPT_TOKENS, completion: COMPLETION_TOKENS, total: PROMPT_TOKENS + COMPLETION_TOKENS } });
  // svc counts integer micro-USD, rounded up
  expect(e.cost_usd).toBeCloseTo(Math.ceil(PROMPT_TOKENS * c.price.input + COMPLETION_TOKENS * c.price.output - 1e-9) / 1e6, 12);
}

export function providerMatrix(ctx: () => MatrixCtx) {
  it("openai client: text and a forced tool call, non-streaming and streaming, audited with usage and cost", async () => {
    const c = ctx();
    const k = await c.env.key();
    const { openai } = clients(c, k.secret);
    const r = await openai.chat.completions.create({ model: c.model, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hello there" }] });
    expect(r.choices[0].message.content).toBe("echo: hello there");
    expect(r.usage).toMatchObject({ prompt_tokens: PROMPT_TOKENS, completion_tokens: COMPLETION_TOKENS });
    await expectAudited(c, k.id, 1, "chat.completions");

    const tools = [{ type: "function" as const, function: WEATHER_TOOL }];
    const forced = { type: "function" as const, function: { name: "get_weather" } };
    const t = await openai.chat.completions.create({ model: c.model, messages: [{ role: "user", content: "Paris?" }], tools, tool_choice: forced });
    expect(t.choices[0].finish_reason).toBe("tool_calls");
    expect(t.choices[0].message.tool_calls?.[0]).toMatchObject({ type: "function", function: { name: "get_weather" } });
    expect(JSON.parse((t.choices[0].message.tool_calls![0] as any).function.arguments)).toEqual(TOOL_ARGS);
    await expectAudited(c, k.id, 2, "chat.completions");

    let text = "";
    for await (const ch of await openai.chat.completions.create({ model: c.model, messages: [{ role: "user", content: "stream me" }], stream: true })) text += ch.choices[0]?.delta?.content ?? "";
    expect(text).toBe("echo: stream me");
    await expectAudited(c, k.id, 3, "chat.stream");

    let name = "";
    let args = "";
    let finish: string | null = null;
    for await (const ch of await openai.chat.completions.create({ model: c.model, messages: [{ role: "user", content: "Paris?" }], tools, tool_choice: forced, stream: true })) {
      const tc = ch.choices[0]?.delta?.tool_calls?.[0];
      if (tc?.function?.name) name += tc.function.name;
      if (tc?.function?.arguments) args += tc.function.arguments;
      finish = ch.choices[0]?.finish_reason ?? finish;
    }
    expect([name, JSON.parse(args), finish]).toEqual(["get_weather", TOOL_ARGS, "tool_calls"]);
    await expectAudited(c, k.id, 4, "chat.stream");
  });

  it("@anthropic-ai/sdk: text and a forced tool call, non-streaming and streaming, audited with usage and cost", async () => {
    const c = ctx();
    const k = await c.env.key();
    const { anthropic } = clients(c, k.secret);
    const m = await anthropic.messages.create({ model: c.model, max_tokens: 64, system: "Be brief.", messages: [{ role: "user", content: "hello there" }] });
    expect(m.content).toEqual([expect.objectContaining({ type: "text", text: "echo: hello there" })]);
    expect(m.usage).toMatchObject({ input_tokens: PROMPT_TOKENS, output_tokens: COMPLETION_TOKENS });
    await expectAudited(c, k.id, 1, "chat.completions");

    const tools = [{ name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, input_schema: WEATHER_TOOL.parameters as any }];
    const t = await anthropic.messages.create({ model: c.model, max_tokens: 64, messages: [{ role: "user", content: "Paris?" }], tools, tool_choice: { type: "tool", name: "get_weather" } });
    expect(t.stop_reason).toBe("tool_use");
    expect(t.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "get_weather", input: TOOL_ARGS });
    await expectAudited(c, k.id, 2, "chat.completions");

    const s = await anthropic.messages.stream({ model: c.model, max_tokens: 64, messages: [{ role: "user", content: "stream me" }] }).finalMessage();
    expect(s.content).toEqual([expect.objectContaining({ type: "text", text: "echo: stream me" })]);
    await expectAudited(c, k.id, 3, "chat.stream");

    const st = await anthropic.messages.stream({ model: c.model, max_tokens: 64, messages: [{ role: "user", content: "Paris?" }], tools, tool_choice: { type: "any" } }).finalMessage();
    expect(st.stop_reason).toBe("tool_use");
    expect(st.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "get_weather", input: TOOL_ARGS });
    expect(st.usage.output_tokens).toBe(COMPLETION_TOKENS);
    await expectAudited(c, k.id, 4, "chat.stream");
  });

  it("ollama client: text and a tool call, non-streaming and streaming, audited with usage and cost", async () => {
    const c = ctx();
    const k = await c.env.key();
    const { ollama } = clients(c, k.secret);
    const r = await ollama.chat({ model: c.model, messages: [{ role: "user", content: "hello there" }] });
    expect(r.message.content).toBe("echo: hello there");
    expect([r.prompt_eval_count, r.eval_count]).toEqual([PROMPT_TOKENS, COMPLETION_TOKENS]);
    await expectAudited(c, k.id, 1, "chat.completions");

    const tools = [{ type: "function", function: WEATHER_TOOL }];
    const t = await ollama.chat({ model: c.model, messages: [{ role: "user", content: "What is the weather in Paris?" }], tools });
    expect(t.message.tool_calls?.[0]?.function).toEqual({ name: "get_weather", arguments: TOOL_ARGS });
    await expectAudited(c, k.id, 2, "chat.completions");

    let text = "";
    let last: any;
    for await (const p of await ollama.chat({ model: c.model, messages: [{ role: "user", content: "stream me" }], stream: true })) {
      text += p.message.content;
      last = p;
    }
    expect(text).toBe("echo: stream me");
    expect(last.done).toBe(true);
    await expectAudited(c, k.id, 3, "chat.stream");

    const calls: any[] = [];
    for await (const p of await ollama.chat({ model: c.model, messages: [{ role: "user", content: "What is the weather in Paris?" }], tools, stream: true })) calls.push(...(p.message.tool_calls ?? []));
    expect(calls.map((x) => x.function)).toEqual([{ name: "get_weather", arguments: TOOL_ARGS }]);
    await expectAudited(c, k.id, 4, "chat.stream");
  });

  it("openai client, Responses API: text and a forced function call, non-streaming and streaming", async () => {
    const c = ctx();
    const k = await c.env.key();
    const { openai } = clients(c, k.secret);
    const r = await openai.responses.create({ model: c.model, input: "hello there", instructions: "Be brief." });
    expect(r.output_text).toBe("echo: hello there");
    expect(r.usage).toMatchObject({ input_tokens: PROMPT_TOKENS, output_tokens: COMPLETION_TOKENS });
    await expectAudited(c, k.id, 1, "chat.completions");

    const tools = [{ type: "function" as const, name: WEATHER_TOOL.name, description: WEATHER_TOOL.description, parameters: WEATHER_TOOL.parameters, strict: false }];
    let args = "";
    let name = "";
    for await (const ev of await openai.responses.create({ model: c.model, input: "Paris?", tools, tool_choice: { type: "function", name: "get_weather" }, stream: true })) {
      if (ev.type === "response.output_item.done" && ev.item.type === "function_call") {
        name = ev.item.name;
        args = ev.item.arguments;
      }
    }
    expect([name, JSON.parse(args)]).toEqual(["get_weather", TOOL_ARGS]);
    await expectAudited(c, k.id, 2, "chat.stream");
  });

  it("a credential the vendor refuses is svc's 502 naming the provider, the credential echoed nowhere", async () => {
    const c = ctx();
    const k = await c.env.key();
    for (const stream of [false, true]) {
      const e = await expectError(c.env.client(k.secret).chat.completions.create({ model: c.badModel, messages: [{ role: "user", content: "hi" }], stream }), 502, "upstream_error");
      expect(e.message).toContain(`provider ${c.badProvider}`);
      expect(JSON.stringify(e.error ?? {}) + e.message).not.toContain(c.badSecret);
    }
    const page = await c.env.gw.audit.query({ keyIds: [k.id] });
    expect(page.data[0]).toMatchObject({ provider: c.badProvider, status: "upstream_error" });
    expect(JSON.stringify(page.data)).not.toContain(c.badSecret);
  });
}
