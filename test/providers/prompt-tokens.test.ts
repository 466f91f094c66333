// The OpenAI-family prompt count (engines/providers/prompt-tokens.ts) frames each message once per
// role and encodes the contents alone, instead of calling gpt-tokenizer's encodeChat on every
// request: it must give exactly encodeChat's count, whatever the contents (non-Latin scripts,
// empty messages), for both encodings; and where encodeChat refuses special-token text in a
// message, the count takes it as text instead of failing the request.
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { promptTokens, promptTokensBound } from "../../engines/providers/prompt-tokens";
import type { RouteTarget } from "../../engines/providers/types";
import type { ChatRequest } from "../../engines/chat/types";

const target = (model: string) => ({ provider: "p", type: "openai", model, upstreamModel: model }) as unknown as RouteTarget;
const text = fc.oneof(fc.string(), fc.string({ unit: "grapheme", maxLength: 40 }), fc.constantFrom("<|im_end|>", "<|endoftext|>", "", "日本語のテキスト", "  \n\t"));
const chat = fc.array(fc.record({ role: fc.constantFrom("system", "user", "assistant"), content: text, name: fc.option(fc.constantFrom("alice", "bob_2", " "), { nil: undefined }) }), { minLength: 1, maxLength: 6 })
  .map((ms) => ms.map(({ name, ...m }) => (name === undefined ? m : { ...m, name })));

describe("OpenAI-family prompt tokens", () => {
  for (const [model, encoding, chatModel] of [["gpt-4o", "o200k_base", "gpt-4o"], ["gpt-4", "cl100k_base", "gpt-4"]] as const) {
    it(`equal encodeChat's count for ${model} (${encoding})`, async () => {
      const e: any = await import(`gpt-tokenizer/encoding/${encoding}`);
      await promptTokens(target(model), { model, messages: [{ role: "user", content: "warm" }] } as ChatRequest); // loads the encoder
      fc.assert(
        fc.property(chat, (messages) => {
          const req = { model, messages } as unknown as ChatRequest;
          let exact: number | undefined;
          try {
            exact = e.encodeChat(messages, chatModel).length;
          } catch {
            // "Disallowed special token found": counted as the text it is
            exact = e.encodeChat(messages.map((m) => ({ ...m, content: "" })), chatModel).length + messages.reduce((n, m) => n + e.encode(m.content, { disallowedSpecial: new Set() }).length, 0);
          }
          expect(promptTokens(target(model), req)).toBe(exact);
        }),
        { numRuns: 300 },
      );
    });
  }

  // a key's per_request_max is judged on this bound when bound plus max_tokens fits, without the
  // tokenizer: it must never be below the count, or a request over the limit would pass
  const named = fc.array(
    fc.record({ role: fc.constantFrom("system", "user", "assistant", "tool", "developer"), content: text, name: fc.option(fc.string({ maxLength: 12 }), { nil: undefined }),
      toolCalls: fc.option(fc.array(fc.record({ id: fc.constant("c1"), name: fc.string({ minLength: 1, maxLength: 10 }), arguments: text }), { maxLength: 2 }), { nil: undefined }) }),
    { minLength: 1, maxLength: 6 },
  );
  for (const model of ["gpt-4o", "gpt-4"]) {
    it(`bound the count without a tokenizer (${model})`, async () => {
      await promptTokens(target(model), { model, messages: [{ role: "user", content: "warm" }] } as ChatRequest);
      fc.assert(
        fc.property(named, fc.option(fc.string(), { nil: undefined }), (messages, prompt) => {
          const req = { model, messages: messages.map((m) => Object.fromEntries(Object.entries(m).filter(([, v]) => v !== undefined))), ...(prompt !== undefined ? { prompt } : {}),
            tools: [{ name: "lookup", description: "find", parameters: { type: "object" } }] } as unknown as ChatRequest;
          const counted = promptTokens(target(model), req) as number;
          expect(promptTokensBound([target(model)], req)).toBeGreaterThanOrEqual(counted);
        }),
        { numRuns: 300 },
      );
    });
  }
  it("leave a local model to its own tokenizer", () => {
    const local = { provider: "local", type: "local", model: "m", upstreamModel: "m" } as unknown as RouteTarget;
    expect(promptTokensBound([target("gpt-4o"), local], { model: "m", messages: [{ role: "user", content: "hi" }] } as unknown as ChatRequest)).toBeUndefined();
  });
});
