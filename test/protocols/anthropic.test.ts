// The official @anthropic-ai/sdk client against svc's /v1/messages on the generated tiny model.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import Ajv from "ajv";
import { MODEL, startProtocolSvc, type ProtocolSvc, user } from "./harness";

let t: ProtocolSvc;
let client: Anthropic;

beforeAll(async () => {
  t = await startProtocolSvc();
  // unauthenticated loopback: send no key at all (a key that is sent is checked)
  client = new Anthropic({ baseURL: t.url, apiKey: "unused", defaultHeaders: { "x-api-key": null, authorization: null }, maxRetries: 0 });
});
afterAll(async () => {
  await t?.stop();
});

// this SDK version's types no longer list sampling fields (temperature, top_p, top_k); the API
// still accepts them, so requests are typed through this
type Params = Anthropic.MessageCreateParamsNonStreaming & { temperature?: number; top_k?: number };
const params = (p: Params) => p as Anthropic.MessageCreateParamsNonStreaming;

const lookupSchema = {
  type: "object",
  properties: { query: { type: "string", maxLength: 24 }, limit: { type: "integer" }, exact: { type: "boolean" } },
  required: ["query", "limit", "exact"],
  additionalProperties: false,
};
const tools = [
  { name: "lookup", description: "Search the catalog", input_schema: lookupSchema as Anthropic.Tool.InputSchema },
  // closed schemas: a free-form object lets a random-weights model ramble until max_tokens
  { name: "noop", input_schema: { type: "object" as const, properties: {}, additionalProperties: false } },
];

describe("messages", () => {
  it("answers with a message", async () => {
    const m = await client.messages.create(params({ model: MODEL, max_tokens: 6, system: "be brief", messages: user("hello"), temperature: 0 }));
    expect(m.type).toBe("message");
    expect(m.id).toMatch(/^msg_/);
    expect(m.role).toBe("assistant");
    expect(m.model).toBe(MODEL);
    expect(m.content[0].type).toBe("text");
    expect((m.content[0] as Anthropic.TextBlock).text.length).toBeGreaterThan(0);
    expect(m.stop_reason).toBe("max_tokens");
    expect(m.stop_sequence).toBeNull();
    expect(m.usage.input_tokens).toBeGreaterThan(0);
    expect(m.usage.output_tokens).toBe(6);
  });

  it("is deterministic at temperature 0, with system blocks", async () => {
    const body = params({ model: MODEL, max_tokens: 8, temperature: 0, system: [{ type: "text" as const, text: "You are terse." }], messages: user("story") });
    const a = await client.messages.create(body);
    const b = await client.messages.create(body);
    expect((a.content[0] as Anthropic.TextBlock).text).toBe((b.content[0] as Anthropic.TextBlock).text);
  });

  it("streams the Messages events, as messages.stream() consumes them", async () => {
    const whole = await client.messages.create(params({ model: MODEL, max_tokens: 8, temperature: 0, messages: user("stream") }));
    const stream = client.messages.stream(params({ model: MODEL, max_tokens: 8, temperature: 0, messages: user("stream") }));
    const types: string[] = [];
    let text = "";
    stream.on("text", (d) => {
      text += d;
    });
    for await (const ev of stream) types.push(ev.type);
    const final = await stream.finalMessage();
    expect(types[0]).toBe("message_start");
    expect(types).toContain("content_block_start");
    expect(types).toContain("content_block_delta");
    expect(types).toContain("content_block_stop");
    expect(types.at(-2)).toBe("message_delta");
    expect(types.at(-1)).toBe("message_stop");
    expect(text).toBe((whole.content[0] as Anthropic.TextBlock).text);
    expect(final.content).toEqual(whole.content);
    expect(final.stop_reason).toBe("max_tokens");
    expect(final.usage.output_tokens).toBe(8);
    expect(final.usage.input_tokens).toBe(whole.usage.input_tokens);
  });

  it("forces a tool_use block with tool_choice {type: tool}", async () => {
    const m = await client.messages.create(params({ model: MODEL, max_tokens: 200, temperature: 0, tools, tool_choice: { type: "tool", name: "lookup" }, messages: user("find shoes") }));
    expect(m.stop_reason).toBe("tool_use");
    const block = m.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock;
    expect(block.name).toBe("lookup");
    expect(block.id).toBeTruthy();
    const validate = new Ajv().compile(lookupSchema);
    expect(validate(block.input), JSON.stringify(validate.errors)).toBe(true);
  });

  it("streams a forced tool_use as input_json_delta pieces", async () => {
    const stream = client.messages.stream(params({ model: MODEL, max_tokens: 200, temperature: 0, tools, tool_choice: { type: "tool", name: "lookup" }, messages: user("find hats") }));
    let pieces = 0;
    stream.on("inputJson", () => pieces++);
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe("tool_use");
    const block = final.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock;
    expect(block.name).toBe("lookup");
    expect(pieces).toBeGreaterThan(1);
    expect(new Ajv().compile(lookupSchema)(block.input)).toBe(true);
  });

  it("accepts tool_use / tool_result history and tool_choice any", async () => {
    const m = await client.messages.create(params({
      model: MODEL,
      max_tokens: 200,
      temperature: 0,
      tools,
      tool_choice: { type: "any" },
      messages: [
        { role: "user", content: "find shoes" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "lookup", input: { query: "shoes", limit: 1, exact: true } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "none found" }, { type: "text", text: "try again" }] },
      ],
    }));
    expect(m.stop_reason).toBe("tool_use");
    expect(m.content.some((b) => b.type === "tool_use")).toBe(true);
  });

  it("honours output_config.format (structured output) and ignores thinking settings", async () => {
    const schema = { type: "object", properties: { title: { type: "string", maxLength: 16 }, done: { type: "boolean" } }, required: ["title", "done"], additionalProperties: false };
    const m = await client.messages.create(
      params({ model: MODEL, max_tokens: 120, temperature: 0, output_config: { format: { type: "json_schema", schema } }, thinking: { type: "disabled" }, messages: user("json please") }),
    );
    expect(m.stop_reason).toBe("end_turn");
    expect(new Ajv().compile(schema)(JSON.parse((m.content[0] as Anthropic.TextBlock).text))).toBe(true);
  });

  it("accepts anthropic-version and a bearer-less request", async () => {
    const res = await fetch(`${t.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: MODEL, max_tokens: 2, messages: user("hi") }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).type).toBe("message");
  });
});

describe("invalid requests get Anthropic-shaped errors", () => {
  const expectError = async (p: Promise<unknown>, status: number, type: string) => {
    const e: any = await p.then(() => null, (x) => x);
    expect(e).toBeInstanceOf(Anthropic.APIError);
    expect(e.status).toBe(status);
    expect(e.error?.type).toBe("error");
    expect(e.error?.error?.type).toBe(type);
    expect(typeof e.error?.error?.message).toBe("string");
  };

  it("missing max_tokens -> 400", () => expectError(client.messages.create({ model: MODEL, messages: user("x") } as any), 400, "invalid_request_error"));
  it("max_tokens 0 -> 400", () => expectError(client.messages.create({ model: MODEL, max_tokens: 0, messages: user("x") }), 400, "invalid_request_error"));
  it("huge max_tokens -> 400", () => expectError(client.messages.create({ model: MODEL, max_tokens: 1e9, messages: user("x") }, { timeout: 30_000 }), 400, "invalid_request_error"));
  it("empty messages -> 400", () => expectError(client.messages.create({ model: MODEL, max_tokens: 4, messages: [] }), 400, "invalid_request_error"));
  it("unknown model -> 404", () => expectError(client.messages.create({ model: "nope", max_tokens: 4, messages: user("x") }), 404, "not_found_error"));
  it("unknown model while streaming -> 404", () => expectError(client.messages.create({ model: "nope", max_tokens: 4, messages: user("x"), stream: true }), 404, "not_found_error"));
  it("tool_choice naming an absent tool -> 400", () =>
    expectError(client.messages.create({ model: MODEL, max_tokens: 4, tools, tool_choice: { type: "tool", name: "other" }, messages: user("x") }), 400, "invalid_request_error"));
  it("a key that is sent is checked -> 401", async () => {
    const keyed = new Anthropic({ baseURL: t.url, apiKey: "sk-svc-not-a-real-key", maxRetries: 0 });
    await expectError(keyed.messages.create({ model: MODEL, max_tokens: 2, messages: user("x") }), 401, "authentication_error");
  });
});
