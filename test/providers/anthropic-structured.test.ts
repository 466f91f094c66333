// Structured output to an Anthropic upstream: an OpenAI client's response_format json_schema, and
// an Anthropic client's output_config.format, reach Anthropic as output_config.format {type:
// "json_schema", schema} (they were dropped, so the answer came back as free text).
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { startEnv, standIn, type Env, type StandIn } from "../gateway/fixtures";

describe("structured output to an Anthropic upstream", () => {
  let env: Env;
  let up: StandIn;
  const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false };

  beforeAll(async () => {
    process.env.STANDIN_CREDENTIAL = "sk-ant-standin";
    up = await standIn();
    env = await startEnv();
    await env.apply([{ kind: "Provider", name: "claude", spec: { type: "anthropic", baseUrl: up.baseUrl.replace(/\/v1$/, ""), credential: "env:STANDIN_CREDENTIAL", models: [{ name: "claude-x", upstreamName: "claude-3-test" }] } }]);
  });
  afterAll(async () => {
    await env?.stop();
    await up?.close();
  });

  it("an OpenAI client's response_format json_schema", async () => {
    const k = await env.key();
    const n = up.requests.length;
    const r = await env.client(k.secret).chat.completions.create({ model: "claude-x", messages: [{ role: "user", content: "where?" }], response_format: { type: "json_schema", json_schema: { name: "place", schema } } });
    expect(r.choices[0].finish_reason).toBe("stop");
    expect(up.requests[n].path).toMatch(/\/messages$/);
    expect((up.requests[n].body as any).output_config).toEqual({ format: { type: "json_schema", schema } });
  });

  it("an Anthropic client's output_config.format", async () => {
    const k = await env.key();
    const n = up.requests.length;
    const a = new Anthropic({ apiKey: k.secret, baseURL: env.url });
    await a.messages.create({ model: "claude-x", max_tokens: 50, messages: [{ role: "user", content: "where?" }], output_config: { format: { type: "json_schema", schema } } } as never);
    expect((up.requests[n].body as any).output_config).toEqual({ format: { type: "json_schema", schema } });
  });

  it("no schema asked, none sent", async () => {
    const k = await env.key();
    const n = up.requests.length;
    await env.client(k.secret).chat.completions.create({ model: "claude-x", messages: [{ role: "user", content: "hi" }] });
    expect(up.requests[n].body as any).not.toHaveProperty("output_config");
  });
});
