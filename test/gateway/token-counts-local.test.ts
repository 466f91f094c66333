// A loaded local model counts a request's prompt tokens with its own tokenizer and chat template
// (node-llama-cpp): per_request_max at exactly the prompt tokens the answer reports plus max_tokens
// passes, one token less is refused.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { ensureTinyModel } from "../../engines/inference";
import { startEnv, expectError, type Env } from "./fixtures";
import { until } from "../helpers/http";

let env: Env;
beforeAll(async () => {
  env = await startEnv();
  await ensureTinyModel(env.svc.svc.modelsDir);
  await env.apply([{ kind: "Model", name: "tiny", spec: { file: "svc-tiny.gguf", threads: 1, contextSize: 512, parallel: 2 } }]);
  await until(() => env.svc.svc.store.get("Model", "tiny")?.status.conditions?.[0]?.status === "True", 20_000);
});
afterAll(async () => {
  await env?.stop();
});

describe("per_request_max on a local model", () => {
  it("counts with the model's tokenizer once it is loaded", async () => {
    const messages = [{ role: "user" as const, content: "hello there, a sentence of several words" }];
    // the first call loads the model (no limit on this key) and reports the true prompt size
    const free = await env.key({});
    const first = await env.client(free.secret).chat.completions.create({ model: "tiny", messages, max_tokens: 2, temperature: 0 });
    const prompt = first.usage!.prompt_tokens;
    expect(prompt).toBeGreaterThan(0);
    const fits = await env.key({ token_limits: { per_request_max: prompt + 2 } });
    const r = await env.client(fits.secret).chat.completions.create({ model: "tiny", messages, max_tokens: 2, temperature: 0 });
    expect(r.usage!.prompt_tokens).toBe(prompt);
    const over = await env.key({ token_limits: { per_request_max: prompt + 1 } });
    const e = await expectError(env.client(over.secret).chat.completions.create({ model: "tiny", messages, max_tokens: 2 }), 402, "quota_exceeded");
    expect(e.message).toContain(`is ${prompt + 2}`);
  });
});
