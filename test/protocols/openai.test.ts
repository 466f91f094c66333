// The official `openai` client against svc on the generated tiny model.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import Ajv from "ajv";
import { cacheStats, IDLE_MODEL, MODEL, waitFor, type ProtocolSvc, user, startWithOpenAI } from "./harness";

let t: ProtocolSvc;
let client: OpenAI;

// unauthenticated loopback: no key at all (placeholder keys have their own tests)
beforeAll(async () => ({ t, client } = await startWithOpenAI()));
afterAll(() => t?.stop());


// constraints the grammar enforces (types, enum, maxLength, required, no extra properties);
// numeric bounds have their own tests in tool-grammar.test.ts
const weatherSchema = {
  type: "object",
  properties: {
    city: { type: "string", maxLength: 20 },
    days: { type: "integer" },
    unit: { type: "string", enum: ["c", "f"] },
  },
  required: ["city", "days", "unit"],
  additionalProperties: false,
};
const weatherTool = { type: "function" as const, function: { name: "get_weather", description: "Weather forecast", parameters: weatherSchema } };

describe("chat completions", () => {
  it("answers with a chat.completion and usage", async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: user("hello"), max_tokens: 8, temperature: 0 });
    expect(r.object).toBe("chat.completion");
    expect(r.id).toMatch(/^chatcmpl-/);
    expect(r.model).toBe(MODEL);
    expect(r.choices).toHaveLength(1);
    expect(r.choices[0].message.role).toBe("assistant");
    expect(typeof r.choices[0].message.content).toBe("string");
    expect(["stop", "length"]).toContain(r.choices[0].finish_reason);
    expect(r.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + r.usage!.completion_tokens);
    expect(r.usage!.completion_tokens).toBeLessThanOrEqual(8);
  });

  it("is deterministic at temperature 0", async () => {
    const body = { model: MODEL, messages: user("tell me a story"), max_tokens: 12, temperature: 0 };
    const a = await client.chat.completions.create(body);
    const b = await client.chat.completions.create(body);
    expect(a.choices[0].message.content).toBe(b.choices[0].message.content);
    expect(a.choices[0].message.content!.length).toBeGreaterThan(0);
  });

  it('reports finish_reason "length" at max_tokens', async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: user("count"), max_tokens: 4, temperature: 0 });
    expect(r.choices[0].finish_reason).toBe("length");
    expect(r.usage!.completion_tokens).toBe(4);
  });

  it("streams role first, content pieces, finish_reason last, usage, [DONE]", async () => {
    const body = { model: MODEL, messages: user("stream please"), max_tokens: 10, temperature: 0 };
    const whole = await client.chat.completions.create(body);
    const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0].choices[0].delta.role).toBe("assistant");
    const withChoices = chunks.filter((c) => c.choices.length > 0);
    expect(withChoices.slice(0, -1).every((c) => c.choices[0].finish_reason === null)).toBe(true);
    expect(withChoices.at(-1)!.choices[0].finish_reason).toBe(whole.choices[0].finish_reason);
    const text = withChoices.map((c) => c.choices[0].delta.content ?? "").join("");
    expect(text).toBe(whole.choices[0].message.content);
    expect(withChoices.filter((c) => c.choices[0].delta.content).length).toBeGreaterThan(1);
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual(whole.usage);
  });

  it("sends SSE frames ending with data: [DONE]", async () => {
    const res = await fetch(`${t.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-agent-id": "agent-7" },
      body: JSON.stringify({ model: MODEL, messages: user("hi"), max_tokens: 3, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const text = await res.text();
    const frames = text.split("\n\n").filter(Boolean);
    expect(frames.every((f) => f.startsWith("data: "))).toBe(true);
    expect(frames.at(-1)).toBe("data: [DONE]");
  });

  it("accepts tool definitions with tool_choice auto", async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: user("weather in Paris?"), tools: [weatherTool], tool_choice: "auto", max_tokens: 8, temperature: 0 });
    expect(r.choices[0].message.role).toBe("assistant");
    expect(["stop", "length", "tool_calls"]).toContain(r.choices[0].finish_reason);
  });

  it("streams a forced tool call as deltas that assemble into schema-valid arguments", async () => {
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: user("What is the weather in Paris for 3 days?"),
      tools: [weatherTool, { type: "function", function: { name: "get_time", parameters: { type: "object", properties: {} } } }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      max_tokens: 200,
      temperature: 0,
      stream: true,
    });
    let id = "";
    let name = "";
    let args = "";
    let argDeltas = 0;
    let finish: string | null = null;
    let firstHadEmptyArgs = false;
    for await (const c of stream) {
      const ch = c.choices[0];
      if (!ch) continue;
      for (const tc of ch.delta.tool_calls ?? []) {
        expect(tc.index).toBe(0);
        if (tc.id) {
          id = tc.id;
          name = tc.function?.name ?? "";
          firstHadEmptyArgs = tc.function?.arguments === "";
        } else if (tc.function?.arguments) {
          args += tc.function.arguments;
          argDeltas++;
        }
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
    expect(id).not.toBe("");
    expect(name).toBe("get_weather");
    expect(firstHadEmptyArgs).toBe(true);
    expect(argDeltas).toBeGreaterThan(1); // split across several events
    expect(finish).toBe("tool_calls");
    const parsed = JSON.parse(args);
    const validate = new Ajv().compile(weatherSchema);
    expect(validate(parsed), JSON.stringify(validate.errors)).toBe(true);
  });

  it("returns a forced tool call with null content when not streaming", async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: user("weather?"),
      tools: [weatherTool],
      tool_choice: "required",
      max_tokens: 200,
      temperature: 0,
    });
    const m = r.choices[0].message;
    expect(r.choices[0].finish_reason).toBe("tool_calls");
    expect(m.content).toBeNull();
    expect(m.tool_calls).toHaveLength(1);
    const call = m.tool_calls![0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    expect(call.type).toBe("function");
    expect(call.function.name).toBe("get_weather");
    expect(new Ajv().compile(weatherSchema)(JSON.parse(call.function.arguments))).toBe(true);
  });

  it("accepts tool results in the conversation", async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      max_tokens: 4,
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "weather?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","days":1,"unit":"c"}' } }] },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
      ],
      tools: [weatherTool],
    });
    expect(r.choices[0].message.role).toBe("assistant");
  });

  it("two concurrent streams both complete", async () => {
    const run = async (prompt: string) => {
      const s = await client.chat.completions.create({ model: MODEL, messages: user(prompt), max_tokens: 40, temperature: 0, stream: true });
      let text = "";
      let finish: string | null = null;
      for await (const c of s) {
        text += c.choices[0]?.delta.content ?? "";
        finish = c.choices[0]?.finish_reason ?? finish;
      }
      return { text, finish };
    };
    const [a, b] = await Promise.all([run("first story"), run("second story")]);
    expect(a.finish).toBe("length");
    expect(b.finish).toBe("length");
    expect(a.text.length).toBeGreaterThan(0);
    expect(b.text.length).toBeGreaterThan(0);
  });

  it("aborting a stream frees the lease", async () => {
    const ac = new AbortController();
    const stream = await client.chat.completions.create(
      { model: MODEL, messages: user("a very long story"), max_tokens: 900, temperature: 0, stream: true },
      { signal: ac.signal },
    );
    let got = 0;
    let finished = false;
    let err: any;
    try {
      for await (const c of stream) {
        if (c.choices[0]?.delta.content) got++;
        if (c.choices[0]?.finish_reason) finished = true;
        if (got === 2) ac.abort();
      }
    } catch (e) {
      err = e;
    }
    // the SDK ends an aborted stream quietly or with an abort error, never another error, and
    // the 900-token answer never reached its end
    expect(err === undefined || /Abort/.test(String(err?.name)), String(err)).toBe(true);
    expect(ac.signal.aborted).toBe(true);
    expect(finished).toBe(false);
    expect(got).toBeGreaterThanOrEqual(2);
    await waitFor(async () => (await cacheStats(t)).totals.activeLeases === 0);
    const s = await cacheStats(t);
    expect(s.totals.activeLeases).toBe(0);
    expect(s.totals.queued).toBe(0);
    // the model still serves
    const r = await client.chat.completions.create({ model: MODEL, messages: user("again"), max_tokens: 2 });
    expect(r.choices[0].finish_reason).toBe("length");
  });

  it("a client that leaves a non-streamed request cancels generation and frees the lease", async () => {
    const ac = new AbortController();
    const p = client.chat.completions.create({ model: MODEL, messages: user("another long story"), max_tokens: 900, temperature: 0 }, { signal: ac.signal });
    await waitFor(async () => (await cacheStats(t)).totals.activeLeases > 0, 10_000, 5);
    ac.abort();
    await expect(p).rejects.toThrow(/abort/i);
    await waitFor(async () => (await cacheStats(t)).totals.activeLeases === 0);
    expect(t.logs.filter((l) => l.level === "error").map((l) => JSON.stringify(l))).toEqual([]);
  });

  it("honours response_format json_schema", async () => {
    const schema = { type: "object", properties: { name: { type: "string", maxLength: 16 }, ok: { type: "boolean" } }, required: ["name", "ok"], additionalProperties: false };
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: user("give me JSON"),
      response_format: { type: "json_schema", json_schema: { name: "thing", schema, strict: true } },
      max_tokens: 120,
      temperature: 0,
      session_id: "s-1",
      metadata: { purpose: "test" },
    } as any);
    expect(r.choices[0].finish_reason).toBe("stop");
    expect(new Ajv().compile(schema)(JSON.parse(r.choices[0].message.content!))).toBe(true);
  });

  it("unloads an idle model after its interval and reloads on the next request", async () => {
    const loaded = async () => ((await cacheStats(t)).models as Array<{ name: string }>).some((m) => m.name === IDLE_MODEL);
    await client.chat.completions.create({ model: IDLE_MODEL, messages: user("wake"), max_tokens: 2 });
    await waitFor(async () => !(await loaded()));
    const r = await client.chat.completions.create({ model: IDLE_MODEL, messages: user("wake again"), max_tokens: 2 });
    expect(r.choices[0].finish_reason).toBe("length");
    expect(r.model).toBe(IDLE_MODEL);
  });
});

describe("completions", () => {
  it("completes a raw prompt", async () => {
    const r = await client.completions.create({ model: MODEL, prompt: "Once upon a time", max_tokens: 6, temperature: 0 });
    expect(r.object).toBe("text_completion");
    expect(r.choices[0].text.length).toBeGreaterThan(0);
    expect(r.choices[0].finish_reason).toBe("length");
    expect(r.usage!.completion_tokens).toBe(6);
  });

  it("streams text_completion chunks", async () => {
    const whole = await client.completions.create({ model: MODEL, prompt: "Once upon a time", max_tokens: 6, temperature: 0 });
    const s = await client.completions.create({ model: MODEL, prompt: "Once upon a time", max_tokens: 6, temperature: 0, stream: true });
    let text = "";
    let finish: string | null = null;
    for await (const c of s) {
      expect(c.object).toBe("text_completion");
      text += c.choices[0]?.text ?? "";
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe(whole.choices[0].text);
    expect(finish).toBe("length");
  });
});

describe("responses", () => {
  it("answers with a response object", async () => {
    const r = await client.responses.create({ model: MODEL, input: "hello", instructions: "be brief", max_output_tokens: 6, temperature: 0 });
    expect(r.object).toBe("response");
    expect(r.status).toBe("incomplete");
    expect(r.incomplete_details?.reason).toBe("max_output_tokens");
    expect(r.output[0].type).toBe("message");
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(r.usage!.output_tokens).toBe(6);
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + 6);
  });

  it("streams its own events, as responses.stream() accumulates them", async () => {
    const whole = await client.responses.create({ model: MODEL, input: [{ role: "user", content: "hello" }], max_output_tokens: 6, temperature: 0 });
    const stream = client.responses.stream({ model: MODEL, input: [{ role: "user", content: "hello" }], max_output_tokens: 6, temperature: 0 });
    const types: string[] = [];
    let deltas = "";
    stream.on("response.output_text.delta", (e) => {
      deltas += e.delta;
    });
    for await (const e of stream) types.push(e.type);
    const final = await stream.finalResponse();
    expect(types[0]).toBe("response.created");
    expect(types).toContain("response.output_item.added");
    expect(types).toContain("response.content_part.added");
    expect(types).toContain("response.output_text.done");
    expect(types).toContain("response.output_item.done");
    expect(types.at(-1)).toBe("response.incomplete");
    expect(final.output_text).toBe(whole.output_text);
    expect(deltas).toBe(whole.output_text);
  });

  it("accepts function_call and function_call_output input items", async () => {
    const r = await client.responses.create({
      model: MODEL,
      max_output_tokens: 4,
      input: [
        { role: "user", content: [{ type: "input_text", text: "weather?" }] },
        { type: "function_call", call_id: "call_9", name: "get_weather", arguments: '{"city":"Oslo","days":1,"unit":"c"}' },
        { type: "function_call_output", call_id: "call_9", output: "rain" },
      ],
    });
    expect(r.output[0].type).toBe("message");
  });

  it("returns a forced function call, streamed as argument deltas", async () => {
    const tools = [{ type: "function" as const, name: "get_weather", parameters: weatherSchema, strict: true }];
    const stream = client.responses.stream({ model: MODEL, input: "weather in Oslo?", tools, tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 200, temperature: 0 });
    let argDeltas = 0;
    stream.on("response.function_call_arguments.delta", () => argDeltas++);
    const final = await stream.finalResponse();
    expect(final.status).toBe("completed");
    const call = final.output.find((o) => o.type === "function_call") as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call.name).toBe("get_weather");
    expect(call.call_id).toBeTruthy();
    expect(argDeltas).toBeGreaterThan(1);
    expect(new Ajv().compile(weatherSchema)(JSON.parse(call.arguments))).toBe(true);
  });
});

describe("embeddings and models", () => {
  it("embeds one or several inputs", async () => {
    const one = await client.embeddings.create({ model: MODEL, input: "hello" });
    expect(one.object).toBe("list");
    expect(one.data).toHaveLength(1);
    expect(one.data[0].embedding.length).toBeGreaterThan(0);
    const two = await client.embeddings.create({ model: MODEL, input: ["hello", "world"], encoding_format: "float" });
    expect(two.data.map((d) => d.index)).toEqual([0, 1]);
    expect(two.data[0].embedding).toHaveLength(one.data[0].embedding.length);
    expect(two.data[0].embedding[0]).toBeCloseTo(one.data[0].embedding[0], 5);
    expect(two.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it("lists models", async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) {
      expect(m.object).toBe("model");
      ids.push(m.id);
    }
    expect(ids).toContain(MODEL);
    const one = await client.models.retrieve(MODEL);
    expect(one.id).toBe(MODEL);
  });
});
