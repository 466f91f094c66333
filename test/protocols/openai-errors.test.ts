// The official `openai` client's errors from svc: OpenAI-shaped 4xx bodies, never a stack trace.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { MODEL, type ProtocolSvc, user, startWithOpenAI } from "./harness";

let t: ProtocolSvc;
let client: OpenAI;

beforeAll(async () => ({ t, client } = await startWithOpenAI()));
afterAll(() => t?.stop());

const otherTool = { type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: {} } } };

describe("invalid requests get OpenAI-shaped 4xx errors", () => {
  const expectError = async (p: Promise<unknown>, status: number, param?: string) => {
    const e: any = await p.then(() => null, (x) => x);
    expect(e).toBeInstanceOf(OpenAI.APIError);
    expect(e.status).toBe(status);
    expect(typeof e.error?.message).toBe("string");
    expect(e.error?.type).toBeTruthy();
    if (param) expect(e.param).toBe(param);
    expect(JSON.stringify(e.error)).not.toMatch(/at .*\.ts:\d+/); // never a stack trace
  };

  it("unknown model -> 404", () => expectError(client.chat.completions.create({ model: "nope", messages: user("x") }), 404));
  it("empty messages -> 400", () => expectError(client.chat.completions.create({ model: MODEL, messages: [] }), 400, "messages"));
  it("bad role -> 400", () => expectError(client.chat.completions.create({ model: MODEL, messages: [{ role: "robot", content: "x" } as any] }), 400, "messages[0].role"));
  it("max_tokens 0 -> 400", () => expectError(client.chat.completions.create({ model: MODEL, messages: user("x"), max_tokens: 0 }), 400, "max_tokens"));
  it("huge max_tokens -> 400", () => expectError(client.chat.completions.create({ model: MODEL, messages: user("x"), max_tokens: 1e9 }), 400, "max_tokens"));
  it("temperature 3 -> 400", () => expectError(client.chat.completions.create({ model: MODEL, messages: user("x"), temperature: 3 }), 400, "temperature"));
  it("n > 1 -> 400", () => expectError(client.chat.completions.create({ model: MODEL, messages: user("x"), n: 2 }), 400, "n"));
  it("unknown named tool -> 400", () =>
    expectError(client.chat.completions.create({ model: MODEL, messages: user("x"), tools: [otherTool], tool_choice: { type: "function", function: { name: "other" } } }), 400, "tool_choice"));
  it("missing model -> 400", () => expectError(client.chat.completions.create({ messages: user("x") } as any), 400, "model"));
  it("stream with an unknown model is a plain 404, not a stream", () => expectError(client.chat.completions.create({ model: "nope", messages: user("x"), stream: true }), 404));
  it("responses with max_output_tokens 0 -> 400", () => expectError(client.responses.create({ model: MODEL, input: "x", max_output_tokens: 0 }), 400));
  it("embeddings with no input -> 400", () => expectError(client.embeddings.create({ model: MODEL, input: [] }), 400, "input"));

  it("malformed JSON -> 400", async () => {
    const res = await fetch(`${t.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    expect(res.status).toBe(400);
    const j = (await res.json()) as any;
    expect(j.error.type).toBe("invalid_request_error");
  });

  it("a key that is sent is checked, even on loopback", async () => {
    const keyed = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: "sk-svc-not-a-real-key", maxRetries: 0 });
    await expectError(keyed.chat.completions.create({ model: MODEL, messages: user("x"), max_tokens: 2 }), 401);
  });
});
