// Smaller protocol conveniences clients rely on: Anthropic's /v1/messages/count_tokens (local
// tokenizer, forwarded to an Anthropic upstream, estimated otherwise), Ollama's error shape on
// unknown /api/* paths, keep_alive 0 (unload), and the liveness probe on GET /.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import { MODEL, startProtocolSvc, waitFor, type ProtocolSvc } from "./harness";
import { COUNT_TOKENS_ANSWER, standIn, type StandIn } from "./standins";

let t: ProtocolSvc;
let up: StandIn;
let anthropic: Anthropic;
let ollama: Ollama;

beforeAll(async () => {
  up = await standIn();
  t = await startProtocolSvc([
    `apiVersion: svc/v1\nkind: Provider\nmetadata: {name: anthro-up}\nspec: {type: anthropic, baseUrl: "${up.origin}", models: [{name: claude-up, upstreamName: claude-real}]}\n`,
    `apiVersion: svc/v1\nkind: Provider\nmetadata: {name: openai-up}\nspec: {type: openai, baseUrl: "${up.baseUrl}", models: [{name: gpt-up}]}\n`,
  ]);
  anthropic = new Anthropic({ baseURL: t.url, apiKey: "unused", defaultHeaders: { "x-api-key": null, authorization: null }, maxRetries: 0 });
  ollama = new Ollama({ host: t.url });
});
afterAll(async () => {
  await t?.stop();
  await up?.close();
});

const tools: Anthropic.Tool[] = [
  { name: "lookup", description: "Search the catalog", input_schema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] } },
];

describe("POST /v1/messages/count_tokens", () => {
  it("counts a local model's prompt with its tokenizer: the input_tokens its answer reports", async () => {
    const body = { model: MODEL, system: "You are terse.", messages: [{ role: "user" as const, content: "hello there, how many tokens is this?" }] };
    const counted = await anthropic.messages.countTokens(body);
    const answered = await anthropic.messages.create({ ...body, max_tokens: 1 });
    expect(counted.input_tokens).toBe(answered.usage.input_tokens);

    const withTools = await anthropic.messages.countTokens({ ...body, tools });
    const answeredWithTools = await anthropic.messages.create({ ...body, tools, max_tokens: 1 });
    expect(withTools.input_tokens).toBe(answeredWithTools.usage.input_tokens);
    expect(withTools.input_tokens).toBeGreaterThan(counted.input_tokens);
  });

  it("forwards to an Anthropic upstream, with the upstream model name", async () => {
    const r = await anthropic.messages.countTokens({ model: "claude-up", system: "sys", messages: [{ role: "user", content: "count me" }], tools });
    expect(r.input_tokens).toBe(COUNT_TOKENS_ANSWER);
    const seen = up.requests.at(-1)!;
    expect(seen.path).toBe("/v1/messages/count_tokens");
    expect(seen.body).toMatchObject({ model: "claude-real", system: "sys", messages: [{ role: "user", content: "count me" }] });
    expect(seen.body.max_tokens).toBeUndefined();
  });

  it("estimates for other upstreams (said in x-svc-token-count)", async () => {
    const short = await anthropic.messages.countTokens({ model: "gpt-up", messages: [{ role: "user", content: "hi" }] }).withResponse();
    const long = await anthropic.messages.countTokens({ model: "gpt-up", messages: [{ role: "user", content: "hi ".repeat(400) }] });
    expect(short.response.headers.get("x-svc-token-count")).toBe("estimate");
    expect(short.data.input_tokens).toBeGreaterThan(0);
    expect(long.input_tokens).toBeGreaterThan(short.data.input_tokens + 200);
  });

  it("refuses an unknown model, a bad body and a bad key in Anthropic's error shape", async () => {
    await expect(anthropic.messages.countTokens({ model: "nope", messages: [{ role: "user", content: "x" }] })).rejects.toMatchObject({ status: 404 });
    const bad = await fetch(`${t.url}/v1/messages/count_tokens`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: MODEL }) });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    const keyed = new Anthropic({ baseURL: t.url, apiKey: "sk-svc-notarealkey", maxRetries: 0 });
    await expect(keyed.messages.countTokens({ model: MODEL, messages: [{ role: "user", content: "x" }] })).rejects.toMatchObject({ status: 401 });
  });
});

describe("Ollama compatibility", () => {
  it("answers unknown /api/* paths with {error: message}, which ollama-js shows", async () => {
    const r = await fetch(`${t.url}/api/nonexistent`);
    expect(r.status).toBe(404);
    const j = (await r.json()) as { error: unknown };
    expect(typeof j.error).toBe("string");
    expect(j.error).toContain("/api/nonexistent");
    // ollama-js: /api/push is not served here (svc pulls models, it does not push them); the
    // client must print a readable message
    const e = await ollama.push({ model: MODEL, stream: false }).then(() => undefined, (x) => x);
    expect(e).toBeInstanceOf(Error);
    expect(e.message).not.toContain("[object Object]");
    expect(e.message).toContain("/api/push");
  });

  it("GET / answers like Ollama's liveness probe", async () => {
    const r = await fetch(`${t.url}/`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await r.text()).toBe("svc is running");
    expect((await fetch(`${t.url}/`, { method: "HEAD" })).status).toBe(200);
  });

  const loaded = async () => (await ollama.ps()).models.map((m) => m.name);

  it("keep_alive 0 with no prompt unloads the model and says done_reason unload", async () => {
    await ollama.generate({ model: MODEL, prompt: "hi", options: { num_predict: 2 } });
    expect(await loaded()).toContain(MODEL);
    const g = await ollama.generate({ model: MODEL, prompt: "", keep_alive: 0 });
    expect(g.done_reason).toBe("unload");
    expect(await loaded()).not.toContain(MODEL);

    await ollama.chat({ model: MODEL, messages: [{ role: "user", content: "hi" }], options: { num_predict: 2 } });
    expect(await loaded()).toContain(MODEL);
    const c = await ollama.chat({ model: MODEL, messages: [], keep_alive: 0 });
    expect(c.done_reason).toBe("unload");
    expect(c.done).toBe(true);
    expect(await loaded()).not.toContain(MODEL);
  });

  it("keep_alive 0 on a generation answers, then unloads the model", async () => {
    const r = await ollama.chat({ model: MODEL, messages: [{ role: "user", content: "hi" }], options: { num_predict: 3, temperature: 0 }, keep_alive: 0 });
    expect(r.message.content.length).toBeGreaterThan(0);
    expect(r.done_reason).toBe("length");
    await waitFor(async () => !(await loaded()).includes(MODEL));
    // streamed, through /api/generate
    let text = "";
    let last: any;
    for await (const p of await ollama.generate({ model: MODEL, prompt: "hi", stream: true, options: { num_predict: 3 }, keep_alive: "0s" })) {
      text += p.response;
      last = p;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(last.done).toBe(true);
    await waitFor(async () => !(await loaded()).includes(MODEL));
    // and the next request loads it again
    const again = await ollama.generate({ model: MODEL, prompt: "hi", options: { num_predict: 2 } });
    expect(again.done).toBe(true);
    expect(await loaded()).toContain(MODEL);
  });

  it("refuses a keep_alive that is not a duration", async () => {
    const e = await ollama.generate({ model: MODEL, prompt: "hi", keep_alive: "soon" as never }).then(() => undefined, (x) => x);
    expect(e?.message).toContain("keep_alive");
  });
});
