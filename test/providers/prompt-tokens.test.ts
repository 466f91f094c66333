// The OpenAI-family prompt count (engines/providers/prompt-tokens.ts) frames each message once per
// role and encodes the contents alone, instead of calling gpt-tokenizer's encodeChat on every
// request: it must give exactly encodeChat's count, whatever the contents (non-Latin scripts,
// empty messages), for both encodings; and where encodeChat refuses special-token text in a
// message, the count takes it as text instead of failing the request.
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { promptTokens } from "../../engines/providers/prompt-tokens";
import type { RouteTarget } from "../../engines/providers/types";
import type { ChatRequest } from "../../engines/chat/types";

const target = (model: string) => ({ provider: "p", type: "openai", model, upstreamModel: model }) as unknown as RouteTarget;
const text = fc.oneof(fc.string(), fc.string({ unit: "grapheme", maxLength: 40 }), fc.constantFrom("<|im_end|>", "<|endoftext|>", "", "日本語のテキスト", "  \n\t"));
const chat = fc.array(fc.record({ role: fc.constantFrom("system", "user", "assistant"), content: text }), { minLength: 1, maxLength: 6 });

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
});
