// token_limits.per_request_max counts tokens with the serving model's tokenizer, not bytes: a
// request whose true size is within the limit passes, one truly over it is still refused (402).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, standIn, provider, expectError, type Env, type StandIn } from "./fixtures";
import { openAiEncoding, promptTokens } from "../../engines/providers/prompt-tokens";
import type { RouteTarget } from "../../engines/providers/types";

let env: Env;
let up: StandIn;
beforeAll(async () => {
  env = await startEnv();
  // the stand-in reports OpenAI's own count for a one-message "hi" chat (8 on gpt-4o)
  up = await standIn({ promptTokens: 8, completionTokens: 2 });
  await env.apply([provider("oa", up, [{ name: "gpt-4o-mini", inputPerMillion: 1, outputPerMillion: 1 }, { name: "house-model" }])]);
});
afterAll(async () => {
  await up?.close();
  await env?.stop();
});

const hi = [{ role: "user" as const, content: "hi" }];

describe("per_request_max counts tokens", () => {
  it('"hi" with max_tokens 2 passes a limit of 10 (8 prompt tokens + 2), through the OpenAI SDK', async () => {
    const k = await env.key({ token_limits: { per_request_max: 10 } });
    const r = await env.client(k.secret).chat.completions.create({ model: "gpt-4o-mini", messages: hi, max_tokens: 2 });
    expect(r.choices[0].message.content).toBe("echo: hi");
    expect(r.usage?.prompt_tokens).toBe(8);
    // a model of an openai-type Provider whose name is not OpenAI's is counted with OpenAI's BPE too
    const r2 = await env.client(k.secret).chat.completions.create({ model: "house-model", messages: hi, max_tokens: 2 });
    expect(r2.choices[0].message.content).toBe("echo: hi");
  });

  it("a request truly over the limit is still refused 402 quota_exceeded, before the upstream", async () => {
    const k = await env.key({ token_limits: { per_request_max: 10 } });
    const c = env.client(k.secret);
    const n = up.requests.length;
    const e = await expectError(c.chat.completions.create({ model: "gpt-4o-mini", messages: hi, max_tokens: 3 }), 402, "quota_exceeded");
    expect(e.message).toContain("per_request_max=10");
    expect(e.message).toContain("is 11");
    await expectError(c.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hello there, how are you" }], max_tokens: 2 }), 402, "quota_exceeded");
    expect(up.requests.length).toBe(n);
  });

  it("settles with the upstream's count: the key's token usage is what the upstream reported", async () => {
    const k = await env.key({ token_limits: { daily: 1000 } });
    await env.client(k.secret).chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "x".repeat(300) }], max_tokens: 2 });
    const r = await env.api("GET", "/v1/usage?group_by=key");
    const row = r.json.data.find((x: any) => x.key_id === k.id);
    // the upstream reported 8 + 2; the tokenizer counted about 45 for the prompt
    expect(row).toMatchObject({ prompt_tokens: 8, completion_tokens: 2, total_tokens: 10 });
  });
});

describe("which tokenizer counts a model", () => {
  const target = (model: string, type: RouteTarget["type"]): RouteTarget => ({ provider: "p", type, model, upstreamModel: model, priced: false, timeoutMs: 1000 });

  it("OpenAI names and openai-type providers use OpenAI's encodings; others the estimate", async () => {
    expect(openAiEncoding("gpt-4o-mini")).toBe("o200k_base");
    expect(openAiEncoding("o3-mini")).toBe("o200k_base");
    expect(openAiEncoding("gpt-4")).toBe("cl100k_base");
    expect(openAiEncoding("gpt-3.5-turbo")).toBe("cl100k_base");
    expect(openAiEncoding("text-embedding-3-small")).toBe("cl100k_base");
    expect(openAiEncoding("claude-3-haiku")).toBeUndefined();
    expect(openAiEncoding("llama3", "azure-openai")).toBe("o200k_base");
    expect(await promptTokens(target("gpt-4o", "openai"), { model: "gpt-4o", messages: hi } as any)).toBe(8);
    expect(await promptTokens(target("gpt-4", "openai"), { model: "gpt-4", messages: hi } as any)).toBe(8);
    // no tokenizer known (an Anthropic model): the byte estimate, 3 + 5 + 1
    expect(await promptTokens(target("claude-x", "anthropic"), { model: "claude-x", messages: hi } as any)).toBe(9);
  });

  it("a local model counts with its own tokenizer when loaded, the estimate when not", async () => {
    const t = target("tiny", "local");
    const req = { model: "tiny", messages: hi } as any;
    expect(await promptTokens(t, req, { chat: () => (async function* () {})(), loadedChatTokens: () => Promise.resolve(6) })).toBe(6);
    expect(await promptTokens(t, req, { chat: () => (async function* () {})(), loadedChatTokens: () => undefined })).toBe(9);
  });
});
