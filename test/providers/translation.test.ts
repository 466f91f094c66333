// Translation edge cases of the provider adapters, against scripted loopback upstreams: each test
// sets what the upstream answers (exact vendor bytes), then a client speaks to svc with its
// official SDK and sees what svc made of it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import type { ServerResponse } from "node:http";
import { EventStreamCodec } from "@smithy/eventstream-codec";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";
import { startEnv, expectError, type Env } from "../gateway/fixtures";
import { json, loopback, type Loopback, type Recorded } from "./standins/common";

let env: Env;
let up: Loopback;
/** what the upstream does with the next request */
let script: (res: ServerResponse, rec: Recorded) => void = (res) => json(res, 500, { error: { message: "no script" } });

const sse = (res: ServerResponse, events: Array<{ event?: string; data: unknown }>, end = true) => {
  res.writeHead(200, { "content-type": "text/event-stream" });
  for (const e of events) res.write(`${e.event ? `event: ${e.event}\n` : ""}data: ${typeof e.data === "string" ? e.data : JSON.stringify(e.data)}\n\n`);
  if (end) res.end();
};

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const awsFrame = (type: string, body: unknown, messageType: "event" | "exception" = "event") =>
  codec.encode({
    headers: {
      [messageType === "event" ? ":event-type" : ":exception-type"]: { type: "string", value: type },
      ":content-type": { type: "string", value: "application/json" },
      ":message-type": { type: "string", value: messageType },
    },
    body: fromUtf8(JSON.stringify(body)),
  });

beforeAll(async () => {
  up = await loopback((_req, res, rec) => script(res, rec));
  process.env.TR_KEY = "tr-upstream-key-0123456789";
  process.env.TR_AWS = "AKIDTRANSLATION01:trSecretKey0123456789abcdefghijklmnopqrs";
  env = await startEnv();
  await env.apply([
    { kind: "Provider", name: "tr-openai", spec: { type: "openai", baseUrl: `${up.origin}/v1`, credential: "env:TR_KEY", timeoutSeconds: 10, models: [{ name: "tr-gpt", upstreamName: "gpt-up" }] } },
    { kind: "Provider", name: "tr-anthropic", spec: { type: "anthropic", baseUrl: up.origin, credential: "env:TR_KEY", timeoutSeconds: 10, models: [{ name: "tr-claude", upstreamName: "claude-up" }] } },
    { kind: "Provider", name: "tr-gemini", spec: { type: "gemini", baseUrl: `${up.origin}/v1beta`, credential: "env:TR_KEY", timeoutSeconds: 10, models: [{ name: "tr-gemini", upstreamName: "gemini-up" }] } },
    { kind: "Provider", name: "tr-bedrock", spec: { type: "bedrock", baseUrl: up.origin, region: "eu-west-3", credential: "env:TR_AWS", timeoutSeconds: 10, models: [{ name: "tr-bedrock", upstreamName: "anthropic.claude-up" }] } },
  ]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

const NOW_TOOL = { name: "now", description: "the time", parameters: { type: "object", properties: {} } };
const tools = [{ type: "function" as const, function: NOW_TOOL }];
const anthropicTools = [{ name: NOW_TOOL.name, description: NOW_TOOL.description, input_schema: NOW_TOOL.parameters as any }];
const anthropicClient = (secret: string) => new Anthropic({ baseURL: env.url, apiKey: secret, maxRetries: 0 });

/** An OpenAI chat.completion.chunk SSE message. */
const chunk = (delta: unknown, finish: string | null = null) => ({ data: { id: "chatcmpl-tr", object: "chat.completion.chunk", created: 1, model: "gpt-up", choices: [{ index: 0, delta, finish_reason: finish }] } });

/** Tool calls an OpenAI streaming client assembles, by index (as the SDKs do). */
async function streamedCalls(s: AsyncIterable<any>) {
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  let finish: string | null = null;
  let usage: any;
  for await (const c of s) {
    for (const tc of c.choices[0]?.delta?.tool_calls ?? []) {
      calls[tc.index] ??= { id: "", name: "", arguments: "" };
      if (tc.id) calls[tc.index].id = tc.id;
      if (tc.function?.name) calls[tc.index].name += tc.function.name;
      if (tc.function?.arguments) calls[tc.index].arguments += tc.function.arguments;
    }
    finish = c.choices[0]?.finish_reason ?? finish;
    usage = c.usage ?? usage;
  }
  return { calls, finish, usage };
}

describe("provider translation", () => {
  it("openai upstream: a tool call answered with finish_reason stop (a forced named tool) is tool_use / tool_calls", async () => {
    const k = await env.key();
    // OpenAI answers a tool_choice naming a function with finish_reason "stop"
    script = (res, rec) =>
      json(res, 200, {
        id: "chatcmpl-tr",
        object: "chat.completion",
        created: 1,
        model: rec.body.model,
        choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [{ id: "call_abc", type: "function", function: { name: "now", arguments: "{}" } }] }, finish_reason: "stop" }],
        usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
      });
    const m = await anthropicClient(k.secret).messages.create({ model: "tr-gpt", max_tokens: 50, messages: [{ role: "user", content: "time?" }], tools: anthropicTools, tool_choice: { type: "tool", name: "now" } });
    expect(m.content).toEqual([{ type: "tool_use", id: "call_abc", name: "now", input: {} }]);
    expect(m.stop_reason).toBe("tool_use");

    const r = await env.client(k.secret).chat.completions.create({ model: "tr-gpt", messages: [{ role: "user", content: "time?" }], tools, tool_choice: { type: "function", function: { name: "now" } } });
    expect(r.choices[0].message.tool_calls?.[0]).toMatchObject({ id: "call_abc", function: { name: "now", arguments: "{}" } });
    expect(r.choices[0].finish_reason).toBe("tool_calls");
  });

  it("openai upstream: parallel streamed tool calls without `index` (Gemini's OpenAI API) stay separate calls", async () => {
    const k = await env.key();
    // one call per chunk, no index, arguments split over chunks, a multi-byte character split
    // between two writes, finish_reason "stop"
    script = (res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const write = (e: { data: unknown }) => res.write(`data: ${JSON.stringify(e.data)}\n\n`);
      write(chunk({ role: "assistant", tool_calls: [{ id: "call_A", type: "function", function: { name: "now", arguments: '{"tz":' } }] }));
      const bytes = Buffer.from(`data: ${JSON.stringify(chunk({ tool_calls: [{ function: { arguments: '"Europe/Zürich"}' } }] }).data)}\n\n`);
      const at = bytes.indexOf(Buffer.from("ü")) + 1; // inside the two bytes of ü
      res.write(bytes.subarray(0, at));
      res.write(bytes.subarray(at));
      write(chunk({ tool_calls: [{ id: "call_B", type: "function", function: { name: "now", arguments: '{"tz":"UTC"}' } }] }));
      write(chunk({}, "stop"));
      write({ data: { id: "chatcmpl-tr", object: "chat.completion.chunk", created: 1, model: "gpt-up", choices: [], usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } } });
      res.end("data: [DONE]\n\n");
    };
    const s = await env.client(k.secret).chat.completions.create({ model: "tr-gpt", messages: [{ role: "user", content: "time in Zürich and UTC?" }], tools, stream: true, stream_options: { include_usage: true } });
    const got = await streamedCalls(s);
    expect(got.calls).toEqual([
      { id: "call_A", name: "now", arguments: '{"tz":"Europe/Zürich"}' },
      { id: "call_B", name: "now", arguments: '{"tz":"UTC"}' },
    ]);
    expect(got.finish).toBe("tool_calls");
    expect(got.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 9 });

    const m = await anthropicClient(k.secret).messages.stream({ model: "tr-gpt", max_tokens: 50, messages: [{ role: "user", content: "time?" }], tools: anthropicTools }).finalMessage();
    expect(m.content).toEqual([
      { type: "tool_use", id: "call_A", name: "now", input: { tz: "Europe/Zürich" } },
      { type: "tool_use", id: "call_B", name: "now", input: { tz: "UTC" } },
    ]);
    expect(m.stop_reason).toBe("tool_use");
  });

  it("anthropic upstream: a streamed tool call without parameters has arguments {} (as non-streaming)", async () => {
    const k = await env.key();
    script = (res) =>
      sse(res, [
        { event: "message_start", data: { type: "message_start", message: { id: "msg_tr", type: "message", role: "assistant", content: [], usage: { input_tokens: 9, output_tokens: 1 } } } },
        { event: "content_block_start", data: { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "toolu_1", name: "now", input: {} } } },
        { event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: "" } } },
        { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
        { event: "message_delta", data: { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 4 } } },
        { event: "message_stop", data: { type: "message_stop" } },
      ]);
    const got = await streamedCalls(await env.client(k.secret).chat.completions.create({ model: "tr-claude", messages: [{ role: "user", content: "time?" }], tools, stream: true }));
    expect(got.calls).toEqual([{ id: "toolu_1", name: "now", arguments: "{}" }]);
    expect(JSON.parse(got.calls[0].arguments)).toEqual({});
    expect(got.finish).toBe("tool_calls");
  });

  it("anthropic upstream: a null input_tokens in message_delta keeps message_start's count", async () => {
    const k = await env.key();
    script = (res) =>
      sse(res, [
        { event: "message_start", data: { type: "message_start", message: { id: "msg_tr", type: "message", role: "assistant", content: [], usage: { input_tokens: 1234, output_tokens: 1 } } } },
        { event: "content_block_start", data: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } } },
        { event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } } },
        { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
        // MessageDeltaUsage: the counts other than output_tokens are nullable
        { event: "message_delta", data: { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { input_tokens: null, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens: 6 } } },
        { event: "message_stop", data: { type: "message_stop" } },
      ]);
    const s = await env.client(k.secret).chat.completions.create({ model: "tr-claude", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { include_usage: true } });
    const got = await streamedCalls(s);
    expect(got.usage).toMatchObject({ prompt_tokens: 1234, completion_tokens: 6 });
    const page = await env.gw.audit.query({ keyIds: [k.id] });
    expect(page.data[0].tokens).toMatchObject({ prompt: 1234, completion: 6 });
  });

  it("gemini: a thinking model's thoughtsTokenCount counts as completion tokens, JSON and streamed", async () => {
    const k = await env.key();
    const usageMetadata = { promptTokenCount: 10, candidatesTokenCount: 2, thoughtsTokenCount: 100, totalTokenCount: 112 };
    script = (res, rec) => {
      const cand = { content: { role: "model", parts: [{ text: "hi" }] }, finishReason: "STOP", index: 0 };
      if (rec.url.includes(":streamGenerateContent")) sse(res, [{ data: { candidates: [cand], usageMetadata } }]);
      else json(res, 200, { candidates: [cand], usageMetadata });
    };
    const r = await env.client(k.secret).chat.completions.create({ model: "tr-gemini", messages: [{ role: "user", content: "hi" }] });
    expect(r.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 102, total_tokens: 112 });
    const got = await streamedCalls(await env.client(k.secret).chat.completions.create({ model: "tr-gemini", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { include_usage: true } }));
    expect(got.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 102, total_tokens: 112 });
  });

  it("bedrock: a throttlingException / validationException as the stream's first frame is 429 / 400", async () => {
    const k = await env.key();
    const exceptionFirst = (type: string, message: string) => (res: ServerResponse) => {
      res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" });
      res.write(awsFrame("messageStart", { role: "assistant" }));
      res.end(awsFrame(type, { message }, "exception"));
    };
    const ask = () => env.client(k.secret).chat.completions.create({ model: "tr-bedrock", messages: [{ role: "user", content: "hi" }], stream: true });
    script = exceptionFirst("throttlingException", "Too many requests, please wait before trying again.");
    const e429 = await expectError(ask(), 429, "rate_limit_exceeded");
    expect(e429.message).toContain("Too many requests");
    script = exceptionFirst("validationException", "Input is too long for requested model.");
    const e400 = await expectError(ask(), 400, "invalid_request");
    expect(e400.message).toContain("Input is too long for requested model.");
    // other exceptions stay the provider's failure
    script = exceptionFirst("modelStreamErrorException", "The model failed.");
    await expectError(ask(), 502, "upstream_error");
  });

  it("anthropic upstream: a rate_limit_error / invalid_request_error as the stream's first event is 429 / 400", async () => {
    const k = await env.key();
    const errorFirst = (type: string, message: string) => (res: ServerResponse) =>
      sse(res, [{ event: "error", data: { type: "error", error: { type, message } } }]);
    const ask = () => env.client(k.secret).chat.completions.create({ model: "tr-claude", messages: [{ role: "user", content: "hi" }], stream: true });
    script = errorFirst("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit");
    const e429 = await expectError(ask(), 429, "rate_limit_exceeded");
    expect(e429.message).toContain("per-minute rate limit");
    script = errorFirst("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum");
    const e400 = await expectError(ask(), 400, "invalid_request");
    expect(e400.message).toContain("prompt is too long");
    script = errorFirst("overloaded_error", "Overloaded");
    await expectError(ask(), 502, "upstream_error");
  });
});
