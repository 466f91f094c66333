// Images inside tool results, through svc: an OpenAI chat tool message with image_url parts, an
// Anthropic tool_result with image blocks, a Responses function_call_output with input_image and
// an Ollama tool message with images, to providers of each type, asserting what the stand-in
// received: Anthropic and Bedrock hold them in the tool result; OpenAI-compatible and Azure (whose
// tool messages take text only) get them in a user message right after the tool messages;
// Gemini beside the functionResponse in the same turn; Ollama on the tool message. A local text
// model refuses them with a 400 naming it; nothing is dropped.
import { describe, expect, it } from "vitest";
import type Anthropic from "@anthropic-ai/sdk";
import { expectError } from "../gateway/fixtures";
import { useVisionEnv, lastBody, PNG, PNG_URL } from "./vision-env";

const REMOTE = "https://images.example.invalid/chart.png";
const TOOL = { name: "screenshot", description: "take a screenshot", parameters: { type: "object", properties: { page: { type: "string" } } } };

const v = useVisionEnv("t", "TOOLIMG");

/** An OpenAI chat conversation: the user asks, the model called `screenshot` (twice when `two`),
 * the tools answered, the first with text and the image. The SDK types a tool message as text
 * only (OpenAI's own API takes no more), so the parts are cast. */
function openAIChat(model: string, image: string, two = false) {
  const calls = [{ id: "call_1", type: "function" as const, function: { name: "screenshot", arguments: '{"page":"home"}' } }];
  if (two) calls.push({ id: "call_2", type: "function" as const, function: { name: "screenshot", arguments: '{"page":"cart"}' } });
  const messages: any[] = [
    { role: "user", content: "show me the page" },
    { role: "assistant", content: null, tool_calls: calls },
    { role: "tool", tool_call_id: "call_1", content: [{ type: "text", text: "home page" }, { type: "image_url", image_url: { url: image } }] },
  ];
  if (two) messages.push({ role: "tool", tool_call_id: "call_2", content: "cart is empty" });
  return v.env.client(v.secret).chat.completions.create({ model, messages, tools: [{ type: "function", function: TOOL }] });
}

/** An Anthropic conversation whose tool_result holds text and an image block. */
function anthropicChat(model: string, source: Anthropic.ImageBlockParam["source"]) {
  return v.anthropic().messages.create({
    model,
    max_tokens: 20,
    tools: [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.parameters as Anthropic.Tool.InputSchema }],
    messages: [
      { role: "user", content: "show me the page" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "screenshot", input: { page: "home" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "home page" }, { type: "image", source }] }] },
    ],
  });
}

describe("images in tool results reach each vendor where it takes them", () => {
  it("openai chat tool message with image_url -> Anthropic: text and image blocks inside the tool_result", async () => {
    await openAIChat("t-claude", PNG_URL);
    const b = lastBody(v.up.requests);
    expect(b.messages[b.messages.length - 1]).toEqual({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "call_1", content: [{ type: "text", text: "home page" }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }] }],
    });
  });

  it("anthropic tool_result with an image block -> Bedrock Converse: toolResult content with an image block", async () => {
    const r = await anthropicChat("t-bedrock", { type: "base64", media_type: "image/png", data: PNG });
    expect(r.content.length).toBeGreaterThan(0);
    const b = lastBody(v.br.requests);
    expect(b.messages[b.messages.length - 1]).toEqual({
      role: "user",
      content: [{ toolResult: { toolUseId: "toolu_1", content: [{ text: "home page" }, { image: { format: "png", source: { bytes: PNG } } }] } }],
    });
  });

  it("anthropic tool_result with an image URL -> Anthropic: the url source is kept; -> Bedrock: 400, nothing sent", async () => {
    await anthropicChat("t-claude", { type: "url", url: REMOTE });
    expect(lastBody(v.up.requests).messages[2].content[0].content[1]).toEqual({ type: "image", source: { type: "url", url: REMOTE } });
    const n = v.br.requests.length;
    const e = await anthropicChat("t-bedrock", { type: "url", url: REMOTE }).then(() => undefined, (x) => x);
    expect(e?.status).toBe(400);
    expect(e?.error?.error?.message).toContain("takes images as bytes only");
    expect(v.br.requests.length).toBe(n);
  });

  it("openai chat, two parallel results -> Azure: tool messages stay text, the image follows them in a user message", async () => {
    const r = await openAIChat("t-azure", PNG_URL, true);
    expect(r.choices[0].message.content).toBe("echo: Images returned by tool call call_1:");
    const msgs = lastBody(v.az.requests).messages;
    expect(msgs.slice(2)).toEqual([
      { role: "tool", tool_call_id: "call_1", content: "home page" },
      { role: "tool", tool_call_id: "call_2", content: "cart is empty" },
      { role: "user", content: [{ type: "text", text: "Images returned by tool call call_1:" }, { type: "image_url", image_url: { url: PNG_URL } }] },
    ]);
  });

  it("openai Responses function_call_output with input_image -> OpenAI-compatible: the same user message after it", async () => {
    const r = await v.env.client(v.secret).responses.create({
      model: "t-openai",
      tools: [{ type: "function", name: TOOL.name, description: TOOL.description, parameters: TOOL.parameters, strict: false }],
      input: [
        { role: "user", content: "show me the page" },
        { type: "function_call", call_id: "call_9", name: "screenshot", arguments: '{"page":"home"}' },
        { type: "function_call_output", call_id: "call_9", output: [{ type: "input_text", text: "home page" }, { type: "input_image", image_url: REMOTE, detail: "low" }] } as any,
      ],
    });
    expect(r.output_text).toBe("echo: Images returned by tool call call_9:");
    expect(lastBody(v.up.requests).messages.slice(2)).toEqual([
      { role: "tool", tool_call_id: "call_9", content: "home page" },
      { role: "user", content: [{ type: "text", text: "Images returned by tool call call_9:" }, { type: "image_url", image_url: { url: REMOTE, detail: "low" } }] },
    ]);
  });

  it("openai chat -> Gemini: the image as inlineData in the functionResponses' turn, after them", async () => {
    const r = await openAIChat("t-gemini", PNG_URL, true);
    expect(r.choices[0].message.content).toBe("echo: Images returned by tool call call_1:");
    const b = lastBody(v.gm.requests);
    expect(b.contents[b.contents.length - 1]).toEqual({
      role: "user",
      parts: [
        { functionResponse: { name: "screenshot", response: { result: "home page" } } },
        { functionResponse: { name: "screenshot", response: { result: "cart is empty" } } },
        { text: "Images returned by tool call call_1:" },
        { inlineData: { mimeType: "image/png", data: PNG } },
      ],
    });
  });

  it("ollama tool message with images -> Ollama: image_url parts on the tool message (its /v1 API makes them the message's images)", async () => {
    const r = await v.ollama().chat({
      model: "t-ollama",
      stream: false,
      messages: [
        { role: "user", content: "show me the page" },
        { role: "assistant", content: "", tool_calls: [{ function: { name: "screenshot", arguments: { page: "home" } } }] },
        { role: "tool", tool_name: "screenshot", content: "home page", images: [PNG] },
      ],
    });
    expect(r.message.role).toBe("assistant");
    const msgs = lastBody(v.up.requests).messages;
    expect(v.up.requests[v.up.requests.length - 1].path).toBe("/v1/chat/completions");
    expect(msgs[msgs.length - 1]).toMatchObject({
      role: "tool",
      content: [{ type: "text", text: "home page" }, { type: "image_url", image_url: { url: PNG_URL } }],
    });
  });
});

describe("images in tool results a model cannot take are refused, never dropped", () => {
  it("a local GGUF text model: 400 naming the model, from the openai and anthropic clients", async () => {
    const e = await expectError(openAIChat("tiny", PNG_URL), 400, "invalid_request");
    expect(e.message).toContain('model "tiny" does not accept images');
    const a = await anthropicChat("tiny", { type: "base64", media_type: "image/png", data: PNG }).then(() => undefined, (x) => x);
    expect(a?.status).toBe(400);
    expect(a?.error?.error?.message).toContain('model "tiny" does not accept images');
  });

  it("a tool result part that is not text or an image is the client's 400", async () => {
    const e = await expectError(
      v.env.client(v.secret).responses.create({
        model: "t-openai",
        input: [
          { type: "function_call", call_id: "c", name: "screenshot", arguments: "{}" },
          { type: "function_call_output", call_id: "c", output: [{ type: "input_file", file_id: "file-1" }] } as any,
        ],
      }),
      400,
      "invalid_request",
    );
    expect(e.message).toContain("input_file");
  });
});
