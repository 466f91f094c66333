// Prompt and completion content on spans, only when a setting turns it on
// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true here; the Server manifest's
// tracing.recordContent is the same switch), and then redacted like logs: a key-shaped secret in
// the prompt (which the stand-in echoes back) is masked in both gen_ai.input.messages and
// gen_ai.output.messages, streamed answers included. gateway-traces.ts checks the default (off).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import OpenAI from "openai";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";
import { eventually } from "../helpers/http";
import { otlpReceiver, type GotSpan, type Receiver } from "./otlp-receiver";

const SECRET = "sk-live0123456789abcdefXYZ";

describe("content recording (on by setting)", () => {
  let env: Env;
  let up: StandIn;
  let rx: Receiver;
  let client: OpenAI;
  const saved = { ...process.env };

  beforeAll(async () => {
    rx = await otlpReceiver();
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "20", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" });
    up = await standIn();
    env = await startEnv();
    await env.apply([provider("up", up, [{ name: "gpt-x" }])]);
    client = new OpenAI({ baseURL: `${env.url}/v1`, apiKey: (await env.key()).secret, maxRetries: 0 });
  });
  afterAll(async () => {
    await env?.stop();
    await up?.close();
    await rx?.close();
    process.env = saved;
  });

  const chatSpanOf = async (traceId: string, name = "chat gpt-x"): Promise<GotSpan> => {
    await eventually(async () => rx.spans.some((s) => s.traceId === traceId && s.name === name));
    return rx.spans.find((s) => s.traceId === traceId && s.name === name)!;
  };
  const lastTraceId = (n: number) => String(up.requests[n].headers.traceparent).split("-")[1];

  it("records the prompt and the completion, secrets masked", async () => {
    const n = up.requests.length;
    const r = await client.chat.completions.create({ model: "gpt-x", messages: [{ role: "user", content: `my key is ${SECRET}` }] });
    expect(r.choices[0].message.content).toContain(SECRET); // the client's answer is untouched
    const c = await chatSpanOf(lastTraceId(n));
    const input = JSON.parse(String(c.attrs["gen_ai.input.messages"]));
    expect(input).toEqual([{ role: "user", content: expect.stringContaining("my key is sk-") }]);
    const output = JSON.parse(String(c.attrs["gen_ai.output.messages"]));
    expect(output).toEqual([{ role: "assistant", content: expect.stringContaining("echo: my key is sk-"), finish_reason: "stop" }]);
    expect(JSON.stringify(c.attrs)).not.toContain(SECRET);
  });

  it("records a streamed completion whole, from its pieces", async () => {
    const n = up.requests.length;
    const stream = await client.chat.completions.create({ model: "gpt-x", stream: true, messages: [{ role: "user", content: "three little words" }] });
    let text = "";
    for await (const ch of stream) text += ch.choices[0]?.delta?.content ?? "";
    expect(text).toBe("echo: three little words");
    const c = await chatSpanOf(lastTraceId(n));
    expect(JSON.parse(String(c.attrs["gen_ai.output.messages"]))).toEqual([{ role: "assistant", content: "echo: three little words", finish_reason: "stop" }]);
  });

  it("records a legacy completion's prompt as its user message", async () => {
    const n = up.requests.length;
    const r = await client.completions.create({ model: "gpt-x", prompt: "once upon" });
    const c = await chatSpanOf(lastTraceId(n), "text_completion gpt-x");
    expect(JSON.parse(String(c.attrs["gen_ai.input.messages"]))).toEqual([{ role: "user", content: "once upon" }]);
    expect(JSON.parse(String(c.attrs["gen_ai.output.messages"]))).toEqual([{ role: "assistant", content: r.choices[0].text, finish_reason: "stop" }]);
  });
});
