// Gemini 3's thought signatures (docs/providers.md): a function call comes back from the model with
// a thoughtSignature, and the next turn is refused (400) unless the call carries it again. An
// OpenAI or Anthropic client keeps only the call's id, which it sends back: through svc, a tool
// loop with a Gemini 3 model goes on, streamed or not, with the stand-in checking the signatures.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { startEnv, type Env } from "../gateway/fixtures";
import { geminiStandIn } from "./standins/gemini";

let env: Env;
let gm: Awaited<ReturnType<typeof geminiStandIn>>;
const tools = [{ type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];

beforeAll(async () => {
  process.env.GM_SIG_KEY = "AIzaSyStandInKey0123456789abcdefghij";
  gm = await geminiStandIn({ apiKey: process.env.GM_SIG_KEY, models: ["gemini-3-pro-preview"] });
  env = await startEnv();
  await env.apply([{ kind: "Provider", name: "google", spec: { type: "gemini", baseUrl: `${gm.origin}/v1beta`, timeoutSeconds: 10, credential: "env:GM_SIG_KEY", models: [{ name: "gemini-3", upstreamName: "gemini-3-pro-preview" }] } }]);
});
afterAll(async () => {
  await env?.stop();
  await gm?.close();
});

describe("gemini 3 thought signatures", () => {
  for (const stream of [false, true]) {
    it(`an OpenAI client's tool loop goes on: the call's signature comes back with it${stream ? " (streamed)" : ""}`, async () => {
      const k = await env.key();
      const c = env.client(k.secret);
      const ask = [{ role: "user" as const, content: "weather in Paris?" }];
      let call: { id: string; name: string; arguments: string };
      if (stream) {
        const parts: Record<string, string> = {};
        let id = "";
        for await (const ch of await c.chat.completions.create({ model: "gemini-3", messages: ask, tools, stream: true })) {
          for (const tc of ch.choices[0]?.delta?.tool_calls ?? []) {
            if (tc.id) id = tc.id;
            if (tc.function?.name) parts.name = tc.function.name;
            parts.args = (parts.args ?? "") + (tc.function?.arguments ?? "");
          }
        }
        call = { id, name: parts.name, arguments: parts.args };
      } else {
        const r = await c.chat.completions.create({ model: "gemini-3", messages: ask, tools });
        const tc = r.choices[0].message.tool_calls![0] as { id: string; function: { name: string; arguments: string } };
        call = { id: tc.id, ...tc.function };
      }
      const n = gm.requests.length;
      const next = await c.chat.completions.create({
        model: "gemini-3",
        tools,
        messages: [...ask, { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }] }, { role: "tool", tool_call_id: call.id, content: '{"temp":21}' }],
      });
      expect(next.choices[0].finish_reason).toBe("tool_calls"); // the stand-in took the history (it asks again)
      const sent = gm.requests[n].body.contents[1].parts[0];
      expect(sent.functionCall).toEqual({ name: "get_weather", args: { city: "Paris" } });
      expect(typeof sent.thoughtSignature).toBe("string");
    });
  }

  it("an Anthropic client's tool_use id carries it too", async () => {
    const k = await env.key();
    const a = new Anthropic({ apiKey: k.secret, baseURL: env.url });
    const atools = [{ name: "get_weather", input_schema: { type: "object" as const, properties: { city: { type: "string" } } } }];
    const ask = [{ role: "user" as const, content: "weather in Paris?" }];
    const r = await a.messages.create({ model: "gemini-3", max_tokens: 100, messages: ask, tools: atools });
    const use = r.content.find((b) => b.type === "tool_use")!;
    expect(use).toBeDefined();
    if (use.type !== "tool_use") return;
    expect(use.id).toMatch(/^[a-zA-Z0-9_-]+$/); // Anthropic's own id alphabet
    const next = await a.messages.create({
      model: "gemini-3",
      max_tokens: 100,
      tools: atools,
      messages: [...ask, { role: "assistant", content: [use] }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: '{"temp":21}' }] }],
    });
    expect(next.stop_reason).toBe("tool_use");
  });
});
