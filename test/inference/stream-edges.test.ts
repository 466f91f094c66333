// Edges of a streamed local generation: the end of the text when max_tokens cuts it while a
// stop string was half matched; a reader that stops reading keeps no sequence once its
// generation is over.
import { getLlama, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectChat } from "../../engines/chat/collect";
import type { ChatRequest } from "../../engines/chat/types";
import { ModelPool } from "../../engines/inference";
import { chatReq, events, tinyModelsDir, tinySpec } from "./fixture";

let llama: Llama;
let pool: ModelPool;

beforeAll(async () => {
  const dir = await tinyModelsDir();
  llama = await getLlama({ gpu: false });
  pool = new ModelPool({ modelsDir: dir, llama });
  pool.register("tiny", tinySpec());
}, 30_000);

afterAll(async () => {
  await pool?.close();
  await llama?.dispose();
});

const weather = [{ name: "get_weather", parameters: { type: "object", properties: { city: { type: "string", maxLength: 10 } } } }];

describe("max_tokens while a stop string is half matched", { timeout: 30_000 }, () => {
  // node-llama-cpp holds back text that may be the start of a stop string; when max_tokens ends
  // the generation there, that text was generated (and counted) but must still reach the client
  const cases: Array<[string, Partial<ChatRequest>]> = [
    ["a raw completion", { messages: [], prompt: "The world" }],
    ["a chat", {}],
    ["a chat with tools the model may call (LlamaChat)", { tools: weather }],
  ];
  for (const [name, over] of cases) {
    it(`keeps the whole text of ${name}`, async () => {
      for (const maxTokens of [3, 12]) {
        const full = await collectChat(pool.chat(chatReq({ ...over, maxTokens })));
        expect(full.finishReason).toBe("length");
        // a stop string that starts with the text's last character and cannot match in full
        const stop = full.text.slice(-1) + "\u0001never";
        const r = await collectChat(pool.chat(chatReq({ ...over, maxTokens, sampling: { temperature: 0, stop: [stop] } })));
        expect(r).toMatchObject({ text: full.text, finishReason: "length", usage: { completionTokens: maxTokens } });
      }
    });
  }

  it("still cuts the text at a stop string that matched", async () => {
    const full = await collectChat(pool.chat(chatReq({ maxTokens: 20 })));
    const stop = full.text.slice(6, 9);
    const r = await collectChat(pool.chat(chatReq({ maxTokens: 20, sampling: { temperature: 0, stop: [stop] } })));
    expect(r).toMatchObject({ text: full.text.slice(0, full.text.indexOf(stop)), finishReason: "stop", stopSequence: stop });
  });
});

describe("a consumer that stops reading", { timeout: 30_000 }, () => {
  it("frees its sequence when its generation ends, not when it reads on", async () => {
    pool.register("one", tinySpec({ parallel: 1 }));
    try {
      // reads one event, then pauses (a client that stopped reading a stream, its socket full)
      const slow = pool.chat(chatReq({ model: "one", maxTokens: 6 }))[Symbol.asyncIterator]();
      const first = await slow.next();
      expect(first.done).toBe(false);
      // the only sequence is needed by the next request: it is served once the 6 tokens are
      // generated, instead of waiting for the slow reader for good
      const next = collectChat(pool.chat(chatReq({ model: "one", maxTokens: 2 })));
      const timedOut = new Promise<"waiting">((r) => setTimeout(() => r("waiting"), 5000).unref());
      const r = await Promise.race([next, timedOut]);
      expect(r).toMatchObject({ finishReason: "length", usage: { completionTokens: 2 } });
      // the slow reader still gets its whole answer when it reads on
      const rest = await events({ [Symbol.asyncIterator]: () => slow });
      expect(rest.at(-1)).toMatchObject({ type: "done", finishReason: "length", usage: { completionTokens: 6 } });
      expect(pool.stats().models.find((m) => m.name === "one")).toMatchObject({ activeLeases: 0, queued: 0 });
    } finally {
      pool.unregister("one");
    }
  });
});
