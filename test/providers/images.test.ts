// Images through svc: the official openai (chat image_url, Responses input_image),
// @anthropic-ai/sdk (image blocks, base64 and url) and ollama (images) clients, to providers of
// each type, asserting the bytes and media type arrive at the stand-in in that vendor's
// documented shape; a vendor that takes only bytes refuses a URL, and a local text model refuses
// any image with a 400 naming it (never dropping it).
import { describe, expect, it } from "vitest";
import { expectError } from "../gateway/fixtures";
import { useVisionEnv, lastBody, PNG, PNG_URL } from "./vision-env";

// a JPEG's first bytes (the media type is read from them when the client gives none)
const JPEG = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDAwMDAwM";
const REMOTE = "https://images.example.invalid/cat.webp";

const v = useVisionEnv("vision", "IMAGES");
const lastUser = (msgs: any[]) => [...msgs].reverse().find((m) => m.role === "user");

describe("images from clients reach each vendor in its own shape", () => {
  it("openai chat image_url (data URL) -> OpenAI-compatible: image_url parts in order", async () => {
    const r = await v.env.client(v.secret).chat.completions.create({
      model: "vision-openai",
      messages: [{ role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image_url", image_url: { url: PNG_URL, detail: "low" } }] }],
    });
    expect(r.choices[0].message.content).toBe("echo: what is this?");
    expect(lastUser(lastBody(v.up.requests).messages).content).toEqual([
      { type: "text", text: "what is this?" },
      { type: "image_url", image_url: { url: PNG_URL, detail: "low" } },
    ]);
  });

  it("openai chat image_url (https URL) -> Anthropic: a url source; streaming", async () => {
    const s = await v.env.client(v.secret).chat.completions.create({
      model: "vision-claude",
      stream: true,
      messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: REMOTE } }, { type: "text", text: "describe" }] }],
    });
    let text = "";
    for await (const c of s) text += c.choices[0]?.delta?.content ?? "";
    expect(text).toBe("echo: describe");
    const b = lastBody(v.up.requests);
    expect(b.messages[0].content).toEqual([{ type: "image", source: { type: "url", url: REMOTE } }, { type: "text", text: "describe" }]);
  });

  it("anthropic image block (base64) -> Anthropic: base64 source with media_type", async () => {
    const r = await v.anthropic().messages.create({
      model: "vision-claude",
      max_tokens: 20,
      messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }, { type: "text", text: "what?" }] }],
    });
    expect(r.content[0]).toMatchObject({ type: "text", text: "echo: what?" });
    expect(lastBody(v.up.requests).messages[0].content).toEqual([
      { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
      { type: "text", text: "what?" },
    ]);
  });

  it("anthropic image block (url) -> Azure OpenAI: an image_url part at the deployment", async () => {
    const n = v.az.requests.length;
    const r = await v.anthropic().messages.create({
      model: "vision-azure",
      max_tokens: 20,
      messages: [{ role: "user", content: [{ type: "text", text: "look" }, { type: "image", source: { type: "url", url: REMOTE } }] }],
    });
    expect(r.content[0]).toMatchObject({ type: "text", text: "echo: look" });
    expect(v.az.requests.length).toBe(n + 1);
    expect(v.az.requests[n].url).toContain("/openai/deployments/vision/chat/completions");
    expect(lastUser(v.az.requests[n].body.messages).content).toEqual([{ type: "text", text: "look" }, { type: "image_url", image_url: { url: REMOTE } }]);
  });

  it("ollama images (base64) -> Ollama: a data URL image_url with the type read from the bytes", async () => {
    const r = await v.ollama().chat({ model: "vision-ollama", stream: false, messages: [{ role: "user", content: "and this?", images: [JPEG] }] });
    expect(r.message.content).toBe("echo: and this?");
    const b = lastBody(v.up.requests);
    expect(v.up.requests[v.up.requests.length - 1].path).toBe("/v1/chat/completions");
    expect(lastUser(b.messages).content).toEqual([
      { type: "text", text: "and this?" },
      { type: "image_url", image_url: { url: `data:image/jpeg;base64,${JPEG}` } },
    ]);
  });

  it("ollama images -> Gemini: inlineData {mimeType, data}; an https URL -> fileData", async () => {
    const r = await v.ollama().chat({ model: "vision-gemini", stream: false, messages: [{ role: "user", content: "tell me", images: [PNG] }] });
    expect(r.message.content).toBe("echo: tell me");
    expect(lastBody(v.gm.requests).contents[0].parts).toEqual([{ text: "tell me" }, { inlineData: { mimeType: "image/png", data: PNG } }]);
    const g = await v.ollama().generate({ model: "vision-gemini", stream: false, prompt: "generate", images: [JPEG] });
    expect(g.response).toBe("echo: generate");
    expect(lastBody(v.gm.requests).contents[0].parts).toEqual([{ text: "generate" }, { inlineData: { mimeType: "image/jpeg", data: JPEG } }]);

    await v.env.client(v.secret).chat.completions.create({
      model: "vision-gemini",
      messages: [{ role: "user", content: [{ type: "text", text: "remote" }, { type: "image_url", image_url: { url: REMOTE } }] }],
    });
    expect(lastBody(v.gm.requests).contents[0].parts).toEqual([{ text: "remote" }, { fileData: { mimeType: "image/webp", fileUri: REMOTE } }]);
  });

  it("openai Responses input_image -> Bedrock Converse: an image block with the bytes, streaming too", async () => {
    const r = await v.env.client(v.secret).responses.create({
      model: "vision-bedrock",
      input: [{ role: "user", content: [{ type: "input_text", text: "bedrock sees" }, { type: "input_image", image_url: PNG_URL, detail: "auto" }] }],
    });
    expect(r.output_text).toBe("echo: bedrock sees");
    const n = v.br.requests.length;
    const want = [{ text: "bedrock sees" }, { image: { format: "png", source: { bytes: PNG } } }];
    expect(lastBody(v.br.requests).messages[0].content).toEqual(want);

    const s = await v.env.client(v.secret).chat.completions.create({
      model: "vision-bedrock",
      stream: true,
      messages: [{ role: "user", content: [{ type: "text", text: "bedrock sees" }, { type: "image_url", image_url: { url: PNG_URL } }] }],
    });
    let text = "";
    for await (const c of s) text += c.choices[0]?.delta?.content ?? "";
    expect(text).toBe("echo: bedrock sees");
    expect(v.br.requests[n].url).toContain("/converse-stream");
    expect(v.br.requests[n].body.messages[0].content).toEqual(want);
  });
});

describe("images a model cannot take are refused, never dropped", () => {
  it("a local GGUF text model: 400 naming the model, from every client", async () => {
    const e = await expectError(
      v.env.client(v.secret).chat.completions.create({ model: "tiny", messages: [{ role: "user", content: [{ type: "text", text: "hi" }, { type: "image_url", image_url: { url: PNG_URL } }] }] }),
      400,
      "invalid_request",
    );
    expect(e.message).toContain('model "tiny" does not accept images');

    const a = await v.anthropic()
      .messages.create({ model: "tiny", max_tokens: 8, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }] }] })
      .then(() => undefined, (x) => x);
    expect(a?.status).toBe(400);
    expect(a?.error?.error?.type).toBe("invalid_request_error");
    expect(a?.error?.error?.message).toContain('model "tiny" does not accept images');

    const o = await v.ollama().chat({ model: "tiny", stream: false, messages: [{ role: "user", content: "hi", images: [PNG] }] }).then(() => undefined, (x) => x);
    expect(o?.status_code).toBe(400);
    expect(String(o?.error)).toContain('model "tiny" does not accept images');

    // the same model still answers text
    const t = await v.env.client(v.secret).chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
    expect(t.choices[0].finish_reason).toBeDefined();
  });

  it("an image URL to a vendor that takes bytes only (Bedrock, Ollama): 400, nothing sent upstream", async () => {
    const n = v.br.requests.length;
    const e = await expectError(
      v.env.client(v.secret).chat.completions.create({ model: "vision-bedrock", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: REMOTE } }] }] }),
      400,
      "invalid_request",
    );
    expect(e.message).toContain("takes images as bytes only");
    expect(v.br.requests.length).toBe(n);
    const m = v.up.requests.length;
    await expectError(
      v.env.client(v.secret).chat.completions.create({ model: "vision-ollama", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: REMOTE } }] }] }),
      400,
      "invalid_request",
    );
    expect(v.up.requests.length).toBe(m);
  });

  it("malformed images are the client's 400: not base64, not an image type, not http(s)", async () => {
    const c = v.env.client(v.secret);
    const send = (url: string) => c.chat.completions.create({ model: "vision-openai", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url } }] }] });
    expect((await expectError(send("data:image/png;base64,@@@"), 400, "invalid_request")).message).toContain("base64");
    expect((await expectError(send(`data:application/pdf;base64,${PNG}`), 400, "invalid_request")).message).toContain("application/pdf");
    expect((await expectError(send("file:///etc/passwd"), 400, "invalid_request")).message).toContain("http(s) URL");
    const o = await v.ollama().chat({ model: "vision-ollama", stream: false, messages: [{ role: "user", content: "x", images: ["aGVsbG8gd29ybGQh"] }] }).then(() => undefined, (x) => x);
    expect(o?.status_code).toBe(400);
    expect(String(o?.error)).toContain("not PNG, JPEG, GIF or WebP");
  });

  it("an image beyond the body limit (4 MiB by default) is 413, nothing sent upstream", async () => {
    const m = v.up.requests.length;
    const big = "A".repeat(5 * 1024 * 1024);
    const e = await v.env
      .client(v.secret)
      .chat.completions.create({ model: "vision-openai", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${big}` } }] }] })
      .then(() => undefined, (x) => x);
    expect(e?.status).toBe(413);
    expect(v.up.requests.length).toBe(m);
  });
});
