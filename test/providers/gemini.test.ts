// Provider type gemini against the Gemini API stand-in (x-goog-api-key): the client matrix
// (matrix.ts) and the request shape (systemInstruction, role model, functionResponse).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, type Env } from "../gateway/fixtures";
import { geminiStandIn } from "./standins/gemini";
import { providerMatrix } from "./matrix";

let env: Env;
let gm: Awaited<ReturnType<typeof geminiStandIn>>;

beforeAll(async () => {
  process.env.GM_TEST_KEY = "AIzaSyStandInKey0123456789abcdefghij";
  process.env.GM_TEST_BAD_KEY = "AIzaSyWrongKey0123456789abcdefghijkl";
  gm = await geminiStandIn({ apiKey: process.env.GM_TEST_KEY, models: ["gemini-2.0-flash"] });
  env = await startEnv();
  const spec = (extra: Record<string, unknown>) => ({ type: "gemini", baseUrl: `${gm.origin}/v1beta`, timeoutSeconds: 10, ...extra });
  await env.apply([
    { kind: "Provider", name: "google", spec: spec({ credential: "env:GM_TEST_KEY", models: [{ name: "gemini-flash", upstreamName: "gemini-2.0-flash", inputPerMillion: 0.1, outputPerMillion: 0.4 }] }) },
    { kind: "Provider", name: "google-badkey", spec: spec({ credential: "env:GM_TEST_BAD_KEY", models: [{ name: "gemini-bad", upstreamName: "gemini-2.0-flash" }] }) },
  ]);
});
afterAll(async () => {
  await env?.stop();
  await gm?.close();
});

describe("gemini", () => {
  providerMatrix(() => ({ env, model: "gemini-flash", provider: "google", price: { input: 0.1, output: 0.4 }, badModel: "gemini-bad", badProvider: "google-badkey", badSecret: process.env.GM_TEST_BAD_KEY! }));

  it("sends generateContent with the key header, the system prompt as systemInstruction and tool turns as function parts", async () => {
    const k = await env.key();
    const n = gm.requests.length;
    const r = await env.client(k.secret).chat.completions.create({
      model: "gemini-flash",
      max_tokens: 30,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "weather?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
        { role: "tool", tool_call_id: "call_0", content: '{"temp":21}' },
        { role: "user", content: "thanks" },
      ],
    });
    expect(r.choices[0].message.content).toBe("echo: thanks");
    const got = gm.requests[n];
    expect(got.url).toBe("/v1beta/models/gemini-2.0-flash:generateContent");
    expect(got.headers["x-goog-api-key"]).toBe(process.env.GM_TEST_KEY);
    expect(got.body).toEqual({
      contents: [
        { role: "user", parts: [{ text: "weather?" }] },
        { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } } }] },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { temp: 21 } } }, { text: "thanks" }] },
      ],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      generationConfig: { maxOutputTokens: 30 },
    });
  });

  it("a 429 whose wait is in the body (RetryInfo) is a 429 with Retry-After", async () => {
    const k = await env.key();
    const res = await fetch(`${env.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${k.secret}`, "content-type": "application/json" }, body: JSON.stringify({ model: "gemini-flash", messages: [{ role: "user", content: "exhaust the quota" }] }) });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("37");
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("rate_limit_exceeded");
  });

  it("streams from streamGenerateContent?alt=sse", async () => {
    const k = await env.key();
    const n = gm.requests.length;
    let text = "";
    for await (const ch of await env.client(k.secret).chat.completions.create({ model: "gemini-flash", messages: [{ role: "user", content: "a b c" }], stream: true })) text += ch.choices[0]?.delta?.content ?? "";
    expect(text).toBe("echo: a b c");
    expect(gm.requests[n].url).toBe("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse");
  });
});
